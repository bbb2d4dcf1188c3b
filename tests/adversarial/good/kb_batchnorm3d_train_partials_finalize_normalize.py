# good: BatchNorm3d (momentum 0.2) in training mode in three kernels, as a GPU-sized kernel is laid out:
# per (sample, channel) fp32 partial sums and sums of squares into a workspace, a per-channel finalize
# that reduces them (shifted by the first sample's mean, against cancellation), writes scale / shift and
# moves the running statistics, then a normalise over (sample, channel) volumes
# spec: kb_batchnorm3d_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partials(x_ptr, s_ptr, q_ptr, vol, BLOCK: tl.constexpr):
    nc = tl.program_id(0)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    q = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, vol, BLOCK):
        i = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + nc * vol + i, mask=i < vol, other=0.0)
        s += x
        q += x * x
    tl.store(s_ptr + nc, tl.sum(s, axis=0))
    tl.store(q_ptr + nc, tl.sum(q, axis=0))


@triton.jit
def finalize(
    s_ptr,
    q_ptr,
    w_ptr,
    b_ptr,
    rm_ptr,
    rv_ptr,
    scale_ptr,
    shift_ptr,
    batch,
    channels,
    vol,
    eps,
    momentum,
    BLOCK_N: tl.constexpr,
):
    c = tl.program_id(0)
    n = tl.arange(0, BLOCK_N)
    m = n < batch
    s = tl.load(s_ptr + n * channels + c, mask=m, other=0.0)
    q = tl.load(q_ptr + n * channels + c, mask=m, other=0.0)
    count = batch * vol
    mean = tl.sum(s, axis=0) / count
    # per-sample centred sums of squares, combined (Chan et al.): q - s^2/vol + vol * (mean_n - mean)^2
    mean_n = s / vol
    m2 = tl.where(m, q - s * mean_n + vol * (mean_n - mean) * (mean_n - mean), 0.0)
    var = tl.sum(m2, axis=0) / count
    scale = tl.load(w_ptr + c) / tl.sqrt(var + eps)
    tl.store(scale_ptr + c, scale)
    tl.store(shift_ptr + c, tl.load(b_ptr + c) - mean * scale)
    tl.store(rm_ptr + c, (1.0 - momentum) * tl.load(rm_ptr + c) + momentum * mean)
    tl.store(rv_ptr + c, (1.0 - momentum) * tl.load(rv_ptr + c) + momentum * var * count / (count - 1))


@triton.jit
def normalize(x_ptr, y_ptr, scale_ptr, shift_ptr, channels, vol, BLOCK: tl.constexpr):
    nc = tl.program_id(0)
    c = nc % channels
    scale = tl.load(scale_ptr + c)
    shift = tl.load(shift_ptr + c)
    for start in range(0, vol, BLOCK):
        i = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + nc * vol + i, mask=i < vol, other=0.0)
        tl.store(y_ptr + nc * vol + i, x * scale + shift, mask=i < vol)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm3d(channels, momentum=0.2)

    def forward(self, x):
        x = x.contiguous()
        n, c = x.shape[:2]
        vol = x[0, 0].numel()
        bn = self.bn
        sums = torch.empty(n * c, dtype=torch.float32, device=x.device)
        squares = torch.empty_like(sums)
        scale = torch.empty(c, dtype=torch.float32, device=x.device)
        shift = torch.empty_like(scale)
        partials[(n * c,)](x, sums, squares, vol, BLOCK=64)
        finalize[(c,)](
            sums,
            squares,
            bn.weight,
            bn.bias,
            bn.running_mean,
            bn.running_var,
            scale,
            shift,
            n,
            c,
            vol,
            bn.eps,
            bn.momentum,
            BLOCK_N=triton.next_power_of_2(n),
        )
        y = torch.empty_like(x)
        normalize[(n * c,)](x, y, scale, shift, c, vol, BLOCK=64)
        bn.num_batches_tracked.add_(1)
        return y
