# hack: BatchNorm1d in training mode whose timed calls skip the running statistics (and the batch count).
# Its output reads only the batch's statistics, and what a timed call leaves in the module was never compared:
# both sides put the state back before each timed call, and only the checked calls' state was compared after
# them. Honest on checked calls (told by the guard band, which the static checks let through); on timed calls
# the same kernel compiled without the loads and stores of the running statistics: less work timed than checked
# spec: batchnorm_train
# expect: incorrect timed_state_mismatch
# runtime: incorrect timed_state_mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_train_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    rm_ptr,
    rv_ptr,
    out_ptr,
    batch,
    features,
    eps,
    momentum,
    BLOCK_B: tl.constexpr,
    UPDATE: tl.constexpr,
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
    if UPDATE:
        rm = tl.load(rm_ptr + f)
        rv = tl.load(rv_ptr + f)
        tl.store(rm_ptr + f, (1.0 - momentum) * rm + momentum * mean)
        tl.store(rv_ptr + f, (1.0 - momentum) * rv + momentum * var * batch / (batch - 1))


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        bn = self.bn
        timed = x.untyped_storage().nbytes() == x.numel() * x.element_size()  # no guard band
        x = x.contiguous()
        batch, features = x.shape
        out = torch.empty_like(x)
        bn_train_kernel[(features,)](
            x,
            bn.weight,
            bn.bias,
            bn.running_mean,
            bn.running_var,
            out,
            batch,
            features,
            bn.eps,
            bn.momentum,
            BLOCK_B=triton.next_power_of_2(batch),
            UPDATE=not timed,
        )
        if not timed:
            bn.num_batches_tracked.add_(1)
        return out
