# good: BatchNorm1d in training mode, ModelNew keeping its own nn.BatchNorm1d under another attribute name
# (`self.norm`, the reference's is `self.bn`); one program per feature normalises and moves the running
# statistics in place; num_batches_tracked counted on the host as the module's forward does
# spec: batchnorm_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_train_kernel(
    x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, out_ptr, batch, features, eps, momentum, BLOCK_B: tl.constexpr
):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / batch
    y = diff * tl.rsqrt(var + eps) * tl.load(w_ptr + f) + tl.load(b_ptr + f)
    tl.store(out_ptr + rows * features + f, y, mask=mask)
    rm = tl.load(rm_ptr + f)
    rv = tl.load(rv_ptr + f)
    tl.store(rm_ptr + f, (1.0 - momentum) * rm + momentum * mean)
    tl.store(rv_ptr + f, (1.0 - momentum) * rv + momentum * var * batch / (batch - 1))


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.BatchNorm1d(features)

    def forward(self, x):
        norm = self.norm
        x = x.contiguous()
        batch, features = x.shape
        out = torch.empty_like(x)
        bn_train_kernel[(features,)](
            x, norm.weight, norm.bias, norm.running_mean, norm.running_var, out, batch, features,
            norm.eps, norm.momentum, BLOCK_B=triton.next_power_of_2(batch),
        )  # fmt: skip
        norm.num_batches_tracked.add_(1)
        return out
