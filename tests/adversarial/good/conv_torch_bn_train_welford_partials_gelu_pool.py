# good: KernelBench level-2 Conv2d + BatchNorm2d (training) + GELU + global average pool: the convolution
# by F.conv2d on the module's own weight (permissive), then Triton: per-(channel, chunk) Welford partials
# (count, mean, M2) into a workspace, a per-channel combine (Chan's parallel formula) that also moves the
# running statistics, and one program per (sample, channel) normalising, applying exact GELU (erf) and
# averaging the plane; num_batches_tracked stepped on the host
# spec: kb_conv_bn_gelu_pool
# strict: false
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

INV_SQRT2 = 1.0 / math.sqrt(2.0)


@triton.jit
def welford_partials_kernel(y_ptr, mean_ptr, m2_ptr, cnt_ptr, N, C, HW, chunks, CHUNK: tl.constexpr):
    c = tl.program_id(0)
    k = tl.program_id(1)
    idx = k * CHUNK + tl.arange(0, CHUNK)
    total = N * HW
    mask = idx < total
    n = idx // HW
    p = idx % HW
    v = tl.load(y_ptr + (n * C + c) * HW + p, mask=mask, other=0.0)
    count = tl.sum(mask.to(tl.float32), axis=0)
    mean = tl.sum(v, axis=0) / tl.maximum(count, 1.0)
    d = tl.where(mask, v - mean, 0.0)
    tl.store(mean_ptr + c * chunks + k, mean)
    tl.store(m2_ptr + c * chunks + k, tl.sum(d * d, axis=0))
    tl.store(cnt_ptr + c * chunks + k, count)


@triton.jit
def welford_combine_kernel(mean_ptr, m2_ptr, cnt_ptr, bmean_ptr, bvar_ptr, rm_ptr, rv_ptr, chunks, momentum):
    c = tl.program_id(0)
    n_a = 0.0
    mean_a = 0.0
    m2_a = 0.0
    for k in range(0, chunks):
        n_b = tl.load(cnt_ptr + c * chunks + k)
        mean_b = tl.load(mean_ptr + c * chunks + k)
        m2_b = tl.load(m2_ptr + c * chunks + k)
        n_ab = n_a + n_b
        delta = mean_b - mean_a
        mean_a = mean_a + delta * n_b / tl.maximum(n_ab, 1.0)
        m2_a = m2_a + m2_b + delta * delta * n_a * n_b / tl.maximum(n_ab, 1.0)
        n_a = n_ab
    var = m2_a / n_a
    tl.store(bmean_ptr + c, mean_a)
    tl.store(bvar_ptr + c, var)
    tl.store(rm_ptr + c, (1.0 - momentum) * tl.load(rm_ptr + c) + momentum * mean_a)
    tl.store(rv_ptr + c, (1.0 - momentum) * tl.load(rv_ptr + c) + momentum * m2_a / (n_a - 1.0))


@triton.jit
def bn_gelu_pool_kernel(
    y_ptr, bmean_ptr, bvar_ptr, w_ptr, b_ptr, out_ptr, C, HW, eps, inv_sqrt2, BLOCK: tl.constexpr
):
    plane = tl.program_id(0)
    c = plane % C
    offs = tl.arange(0, BLOCK)
    mask = offs < HW
    v = tl.load(y_ptr + plane * HW + offs, mask=mask, other=0.0)
    z = (v - tl.load(bmean_ptr + c)) * tl.rsqrt(tl.load(bvar_ptr + c) + eps)
    z = z * tl.load(w_ptr + c) + tl.load(b_ptr + c)
    g = 0.5 * z * (1.0 + tl.math.erf(z * inv_sqrt2))
    tl.store(out_ptr + plane, tl.sum(tl.where(mask, g, 0.0), axis=0) / HW)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        n, c, h, w = y.shape
        hw = h * w
        CHUNK = 32
        chunks = triton.cdiv(n * hw, CHUNK)
        part_mean = torch.empty((c, chunks), device=y.device, dtype=torch.float32)
        part_m2 = torch.empty_like(part_mean)
        part_cnt = torch.empty_like(part_mean)
        welford_partials_kernel[(c, chunks)](y, part_mean, part_m2, part_cnt, n, c, hw, chunks, CHUNK=CHUNK)
        bn = self.bn
        bmean = torch.empty(c, device=y.device, dtype=torch.float32)
        bvar = torch.empty_like(bmean)
        welford_combine_kernel[(c,)](
            part_mean, part_m2, part_cnt, bmean, bvar, bn.running_mean, bn.running_var, chunks, bn.momentum
        )
        bn.num_batches_tracked.add_(1)
        out = torch.empty((n, c), device=y.device, dtype=y.dtype)
        bn_gelu_pool_kernel[(n * c,)](
            y,
            bmean,
            bvar,
            bn.weight,
            bn.bias,
            out,
            c,
            hw,
            bn.eps,
            INV_SQRT2,
            BLOCK=triton.next_power_of_2(hw),
        )
        return out
