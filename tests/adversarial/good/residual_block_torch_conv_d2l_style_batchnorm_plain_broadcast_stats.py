# good: KernelBench level-3 residual block (two Conv2d + BatchNorm2d in training mode) with the
# convolutions by F.conv2d (permissive) and a d2l.ai-style BatchNorm module written once and used twice:
# gamma and beta as nn.Parameter of shape (1, C, 1, 1), the moving statistics as plain tensor attributes
# of that shape (moved to the input's device by hand), PyTorch's momentum and unbiased running variance;
# one Triton kernel per channel normalises (with the ReLU, and for the second norm the residual add then
# ReLU, chosen by constexpr flags) and moves the statistics
# spec: kb_residual_block
# strict: false
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def bn2d_train_kernel(
    x_ptr,
    res_ptr,
    g_ptr,
    b_ptr,
    rm_ptr,
    rv_ptr,
    y_ptr,
    N,
    C,
    HW,
    eps,
    momentum,
    RELU: tl.constexpr,
    RESIDUAL: tl.constexpr,
    BLOCK: tl.constexpr,
):
    c = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    total = N * HW
    mask = offs < total
    idx = (offs // HW) * C * HW + c * HW + offs % HW
    x = tl.load(x_ptr + idx, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / total
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / total
    y = xc * tl.rsqrt(var + eps) * tl.load(g_ptr + c) + tl.load(b_ptr + c)
    if RESIDUAL:
        y += tl.load(res_ptr + idx, mask=mask, other=0.0)
    if RELU:
        y = tl.maximum(y, 0.0)
    tl.store(y_ptr + idx, y, mask=mask)
    tl.store(rm_ptr + c, (1.0 - momentum) * tl.load(rm_ptr + c) + momentum * mean)
    tl.store(rv_ptr + c, (1.0 - momentum) * tl.load(rv_ptr + c) + momentum * var * total / (total - 1))


class BatchNorm(nn.Module):
    """BatchNorm for (N, C, H, W) in training mode, its per-channel tensors shaped to broadcast."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        super().__init__()
        shape = (1, num_features, 1, 1)
        self.eps = eps
        self.momentum = momentum
        self.gamma = nn.Parameter(torch.ones(shape))
        self.beta = nn.Parameter(torch.zeros(shape))
        self.moving_mean = torch.zeros(shape)
        self.moving_var = torch.ones(shape)

    def forward(self, x, residual=None, relu=True):
        if self.moving_mean.device != x.device:
            self.moving_mean = self.moving_mean.to(x.device)
            self.moving_var = self.moving_var.to(x.device)
        x = x.contiguous()
        n, c, h, w = x.shape
        y = torch.empty_like(x)
        bn2d_train_kernel[(c,)](
            x,
            residual if residual is not None else x,
            self.gamma,
            self.beta,
            self.moving_mean,
            self.moving_var,
            y,
            n,
            c,
            h * w,
            self.eps,
            self.momentum,
            RELU=relu,
            RESIDUAL=residual is not None,
            BLOCK=triton.next_power_of_2(n * h * w),
        )
        return y


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = BatchNorm(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = BatchNorm(channels)

    def forward(self, x):
        out = self.bn1(F.conv2d(x, self.conv1.weight, padding=1))
        out = F.conv2d(out, self.conv2.weight, padding=1)
        return self.bn2(out, residual=x.contiguous(), relu=True)
