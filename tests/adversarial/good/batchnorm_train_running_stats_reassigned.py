# good: BatchNorm1d in training mode; the kernel writes the moved running statistics into fresh tensors
# and ModelNew reassigns the module's buffers (`bn.running_mean = new_mean`), as functional-style code
# does, rather than updating them in place
# spec: batchnorm_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_train_kernel(
    x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, new_rm_ptr, new_rv_ptr, out_ptr, batch, features, eps, momentum,
    BLOCK_B: tl.constexpr,
):  # fmt: skip
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / batch
    y = diff * tl.rsqrt(var + eps) * tl.load(w_ptr + f) + tl.load(b_ptr + f)
    tl.store(out_ptr + rows * features + f, y, mask=mask)
    tl.store(new_rm_ptr + f, (1.0 - momentum) * tl.load(rm_ptr + f) + momentum * mean)
    tl.store(new_rv_ptr + f, (1.0 - momentum) * tl.load(rv_ptr + f) + momentum * var * batch / (batch - 1))


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        bn = self.bn
        x = x.contiguous()
        batch, features = x.shape
        out = torch.empty_like(x)
        new_mean = torch.empty_like(bn.running_mean)
        new_var = torch.empty_like(bn.running_var)
        bn_train_kernel[(features,)](
            x, bn.weight, bn.bias, bn.running_mean, bn.running_var, new_mean, new_var, out, batch, features,
            bn.eps, bn.momentum, BLOCK_B=triton.next_power_of_2(batch),
        )  # fmt: skip
        bn.running_mean = new_mean
        bn.running_var = new_var
        bn.num_batches_tracked += 1
        return out
