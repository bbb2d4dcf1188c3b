# good: BatchNorm1d with momentum=None in training mode (a cumulative moving average): the counter is
# stepped on the host as nn.BatchNorm does, and the kernel reads num_batches_tracked itself to form the
# factor 1 / num_batches_tracked for the running statistics
# spec: kb_batchnorm_cumulative
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_cma_kernel(
    x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, nbt_ptr, out_ptr, batch, features, eps, BLOCK_B: tl.constexpr
):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / batch
    tl.store(
        out_ptr + rows * features + f,
        diff * tl.rsqrt(var + eps) * tl.load(w_ptr + f) + tl.load(b_ptr + f),
        mask=mask,
    )
    factor = 1.0 / tl.load(nbt_ptr).to(tl.float32)
    tl.store(rm_ptr + f, (1.0 - factor) * tl.load(rm_ptr + f) + factor * mean)
    tl.store(rv_ptr + f, (1.0 - factor) * tl.load(rv_ptr + f) + factor * var * batch / (batch - 1))


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features, momentum=None)

    def forward(self, x):
        bn = self.bn
        x = x.contiguous()
        batch, features = x.shape
        bn.num_batches_tracked.add_(1)
        out = torch.empty_like(x)
        bn_cma_kernel[(features,)](
            x,
            bn.weight,
            bn.bias,
            bn.running_mean,
            bn.running_var,
            bn.num_batches_tracked,
            out,
            batch,
            features,
            bn.eps,
            BLOCK_B=triton.next_power_of_2(batch),
        )
        return out
