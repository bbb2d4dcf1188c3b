# good: KernelBench level-2 Conv2d + GroupNorm + swish with the convolution by the module (permissive) and
# GroupNorm in Triton the way Inductor writes it: per (sample, group) a Welford reduction by `tl.reduce`
# over (mean, M2, count) triples with a @triton.jit combine function, then an elementwise kernel for the
# affine normalisation and x * sigmoid(x); the grid of the second a lambda over meta['BLOCK_SIZE']
# spec: kb_conv_groupnorm_swish
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    delta = mean_b - mean_a
    frac = tl.where(n == 0.0, 0.0, n_b / tl.where(n == 0.0, 1.0, n))
    return mean_a + delta * frac, m2_a + m2_b + delta * delta * n_a * frac, n


@triton.jit
def group_welford_kernel(y_ptr, mean_ptr, rstd_ptr, group_numel, eps, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < group_numel
    v = tl.load(y_ptr + g * group_numel + offs, mask=mask, other=0.0)
    count = mask.to(tl.float32)
    m2 = tl.zeros((BLOCK,), dtype=tl.float32)
    mean, m2, n = tl.reduce((v, m2, count), 0, welford_combine)
    tl.store(mean_ptr + g, mean)
    tl.store(rstd_ptr + g, tl.rsqrt(m2 / n + eps))


@triton.jit
def groupnorm_swish_apply_kernel(
    y_ptr, mean_ptr, rstd_ptr, w_ptr, b_ptr, out_ptr, numel, C, HW, cpg, BLOCK_SIZE: tl.constexpr
):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < numel
    c = (offs // HW) % C
    g = offs // (HW * cpg)
    v = tl.load(y_ptr + offs, mask=mask, other=0.0)
    z = (v - tl.load(mean_ptr + g, mask=mask, other=0.0)) * tl.load(rstd_ptr + g, mask=mask, other=1.0)
    z = z * tl.load(w_ptr + c, mask=mask, other=1.0) + tl.load(b_ptr + c, mask=mask, other=0.0)
    tl.store(out_ptr + offs, z * tl.sigmoid(z), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        y = self.conv(x).contiguous()
        n, c, h, w = y.shape
        gn = self.group_norm
        cpg = c // gn.num_groups
        group_numel = cpg * h * w
        mean = torch.empty(n * gn.num_groups, device=y.device, dtype=torch.float32)
        rstd = torch.empty_like(mean)
        group_welford_kernel[(n * gn.num_groups,)](
            y, mean, rstd, group_numel, gn.eps, BLOCK=triton.next_power_of_2(group_numel)
        )
        out = torch.empty_like(y)
        numel = y.numel()
        groupnorm_swish_apply_kernel[lambda meta: (triton.cdiv(numel, meta["BLOCK_SIZE"]),)](
            y, mean, rstd, gn.weight, gn.bias, out, numel, c, h * w, cpg, BLOCK_SIZE=256
        )
        return out
