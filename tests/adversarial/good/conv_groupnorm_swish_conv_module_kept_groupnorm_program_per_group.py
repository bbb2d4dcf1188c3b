# good: KernelBench level-2 Conv2d + GroupNorm + swish, LLM style: `self.conv(x)` kept (permissive), the
# GroupNorm's affine and the swish in one Triton program per (sample, group), `num_groups` / `eps` read off
# `self.group_norm`, shape read into Python ints with `x.size()`
# spec: kb_conv_groupnorm_swish
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def groupnorm_swish_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, C, HW, G, eps, CPG: tl.constexpr, BLOCK_HW: tl.constexpr
):
    pid = tl.program_id(0)
    n = pid // G
    g = pid % G
    cs = tl.arange(0, CPG)
    hw = tl.arange(0, BLOCK_HW)
    mask = hw[None, :] < HW
    ch = g * CPG + cs
    ptrs = n * C * HW + ch[:, None] * HW + hw[None, :]
    x = tl.load(x_ptr + ptrs, mask=mask, other=0.0)
    count = CPG * HW
    mean = tl.sum(tl.sum(x, axis=1), axis=0) / count
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(tl.sum(d * d, axis=1), axis=0) / count
    y = d / tl.sqrt(var + eps) * tl.load(w_ptr + ch)[:, None] + tl.load(b_ptr + ch)[:, None]
    tl.store(out_ptr + ptrs, y * tl.sigmoid(y), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        x = self.conv(x).contiguous()
        batch, channels, height, width = x.size()
        groups = self.group_norm.num_groups
        out = torch.empty_like(x)
        groupnorm_swish_kernel[(batch * groups,)](
            x,
            self.group_norm.weight,
            self.group_norm.bias,
            out,
            channels,
            height * width,
            groups,
            self.group_norm.eps,
            CPG=channels // groups,
            BLOCK_HW=triton.next_power_of_2(height * width),
        )
        return out
