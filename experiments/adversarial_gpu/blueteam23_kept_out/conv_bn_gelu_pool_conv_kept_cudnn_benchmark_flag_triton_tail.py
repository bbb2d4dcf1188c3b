# kept out (round 23): `torch.backends.cudnn.benchmark = True` at import is `rejected_static patching` with
# the checks on (ok with them off). Kept out, not fixed: the flag is process-wide state that outlives the
# candidate's module (every later cuDNN call in the runner, the reference's and the compile baseline's
# included, autotunes under it), and a speedup from cuDNN's algorithm search is not the kernel's work.
# The same kernel with the flag left alone is `good/conv_bn_gelu_pool_conv_kept_cudnn_left_alone_triton_tail`.
# good: KernelBench level-2 Conv2d + BatchNorm2d (training) + GELU + spatial mean, LLM style: the module
# sets `torch.backends.cudnn.benchmark = True` at import (a speed flag, not a precision one), the conv by
# `self.conv` (permissive), BN statistics + running statistics + erf GELU + the mean over H x W in one
# Triton program per channel writing (N, C)
# spec: kb_conv_bn_gelu_pool
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl

torch.backends.cudnn.benchmark = True


@triton.jit
def bn_gelu_mean_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    rm_ptr,
    rv_ptr,
    out_ptr,
    N,
    C,
    HW,
    eps,
    momentum,
    BLOCK_N: tl.constexpr,
    BLOCK_HW: tl.constexpr,
):
    c = tl.program_id(0)
    n = tl.arange(0, BLOCK_N)
    hw = tl.arange(0, BLOCK_HW)
    mask = (n[:, None] < N) & (hw[None, :] < HW)
    x = tl.load(x_ptr + n[:, None] * C * HW + c * HW + hw[None, :], mask=mask, other=0.0)
    count = N * HW
    mean = tl.sum(tl.sum(x, axis=1), axis=0) / count
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(tl.sum(d * d, axis=1), axis=0) / count
    y = d / tl.sqrt(var + eps) * tl.load(w_ptr + c) + tl.load(b_ptr + c)
    g = 0.5 * y * (1.0 + tl.math.erf(y * 0.7071067811865476))
    g = tl.where(mask, g, 0.0)
    pooled = tl.sum(g, axis=1) / HW
    tl.store(out_ptr + n * C + c, pooled, mask=n < N)
    tl.store(rm_ptr + c, (1.0 - momentum) * tl.load(rm_ptr + c) + momentum * mean)
    tl.store(rv_ptr + c, (1.0 - momentum) * tl.load(rv_ptr + c) + momentum * var * count / (count - 1))


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        y = self.conv(x).contiguous()
        N, C, H, W = y.shape
        out = torch.empty((N, C), device=y.device, dtype=y.dtype)
        if self.training:
            self.bn.num_batches_tracked.add_(1)
        bn_gelu_mean_kernel[(C,)](
            y,
            self.bn.weight,
            self.bn.bias,
            self.bn.running_mean,
            self.bn.running_var,
            out,
            N,
            C,
            H * W,
            self.bn.eps,
            self.bn.momentum,
            BLOCK_N=triton.next_power_of_2(N),
            BLOCK_HW=triton.next_power_of_2(H * W),
        )
        return out
