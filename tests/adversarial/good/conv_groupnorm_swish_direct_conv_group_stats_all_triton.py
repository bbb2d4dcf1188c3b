# good: KernelBench level-2 Conv2d + GroupNorm + swish entirely in Triton (strict): a direct convolution
# kernel (one program per (sample, output channel) plane, loops over input channels and the 3x3 window),
# a statistics kernel per (sample, group) writing mean and rstd, and an elementwise kernel for the affine
# GroupNorm and x * sigmoid(x); grids as lambdas over meta['BLOCK'], math.prod for the plane size
# spec: kb_conv_groupnorm_swish
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_plane_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    C_in,
    H,
    W,
    C_out,
    OH,
    OW,
    KH: tl.constexpr,
    KW: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    n = pid // C_out
    oc = pid % C_out
    offs = tl.arange(0, BLOCK)
    mask = offs < OH * OW
    oh = offs // OW
    ow = offs % OW
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for ic in range(0, C_in):
        for kh in tl.static_range(KH):
            for kw in tl.static_range(KW):
                xv = tl.load(x_ptr + ((n * C_in + ic) * H + oh + kh) * W + ow + kw, mask=mask, other=0.0)
                wv = tl.load(w_ptr + ((oc * C_in + ic) * KH + kh) * KW + kw)
                acc += xv * wv
    acc += tl.load(b_ptr + oc)
    tl.store(y_ptr + pid * OH * OW + offs, acc, mask=mask)


@triton.jit
def group_stats_kernel(y_ptr, mean_ptr, rstd_ptr, group_numel, eps, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    base = y_ptr + g * group_numel
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, group_numel, BLOCK):
        acc += tl.load(base + start + offs, mask=start + offs < group_numel, other=0.0)
    mean = tl.sum(acc, axis=0) / group_numel
    acc2 = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, group_numel, BLOCK):
        v = tl.load(base + start + offs, mask=start + offs < group_numel, other=0.0)
        d = tl.where(start + offs < group_numel, v - mean, 0.0)
        acc2 += d * d
    tl.store(mean_ptr + g, mean)
    tl.store(rstd_ptr + g, 1.0 / tl.sqrt(tl.sum(acc2, axis=0) / group_numel + eps))


@triton.jit
def groupnorm_swish_kernel(
    y_ptr, mean_ptr, rstd_ptr, w_ptr, b_ptr, out_ptr, numel, C, HW, channels_per_group, BLOCK: tl.constexpr
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    c = (offs // HW) % C
    ng = offs // (HW * channels_per_group)
    v = tl.load(y_ptr + offs, mask=mask, other=0.0)
    z = (v - tl.load(mean_ptr + ng, mask=mask, other=0.0)) * tl.load(rstd_ptr + ng, mask=mask, other=0.0)
    z = z * tl.load(w_ptr + c, mask=mask, other=0.0) + tl.load(b_ptr + c, mask=mask, other=0.0)
    tl.store(out_ptr + offs, z * tl.sigmoid(z), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        x = x.contiguous()
        n, c_in, h, w = x.shape
        c_out, _, kh, kw = self.conv.weight.shape
        oh, ow = h - kh + 1, w - kw + 1
        plane = math.prod((oh, ow))
        y = torch.empty((n, c_out, oh, ow), device=x.device, dtype=x.dtype)
        conv2d_plane_kernel[(n * c_out,)](
            x,
            self.conv.weight,
            self.conv.bias,
            y,
            c_in,
            h,
            w,
            c_out,
            oh,
            ow,
            KH=kh,
            KW=kw,
            BLOCK=triton.next_power_of_2(plane),
        )
        gn = self.group_norm
        groups = gn.num_groups
        per_group = c_out // groups
        mean = torch.empty(n * groups, device=x.device, dtype=torch.float32)
        rstd = torch.empty_like(mean)
        group_stats_kernel[(n * groups,)](y, mean, rstd, per_group * plane, gn.eps, BLOCK=128)
        out = torch.empty_like(y)
        numel = y.numel()
        grid = lambda meta: (triton.cdiv(numel, meta["BLOCK"]),)  # noqa: E731
        groupnorm_swish_kernel[grid](
            y, mean, rstd, gn.weight, gn.bias, out, numel, c_out, plane, per_group, BLOCK=256
        )
        return out
