# good: KernelBench level-2 Conv2d + GroupNorm + swish: the conv by the module (permissive), GroupNorm and
# x * sigmoid(x) in one Triton kernel, one program per (sample, group) over the group's channels x H x W
# spec: kb_conv_groupnorm_swish
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def groupnorm_swish_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, group_size, hw, channels_per_group, groups, eps, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    g = pid % groups
    base = pid * group_size
    offs = tl.arange(0, BLOCK)
    mask = offs < group_size
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / group_size
    diff = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(diff * diff, axis=0) / group_size + eps)
    c = g * channels_per_group + offs // hw
    y = diff * rstd * tl.load(w_ptr + c, mask=mask, other=1.0) + tl.load(b_ptr + c, mask=mask, other=0.0)
    tl.store(out_ptr + base + offs, y * tl.sigmoid(y), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        y = self.conv(x).contiguous()
        batch, channels, h, w = y.shape
        groups = self.group_norm.num_groups
        group_size = (channels // groups) * h * w
        out = torch.empty_like(y)
        groupnorm_swish_kernel[(batch * groups,)](
            y,
            self.group_norm.weight,
            self.group_norm.bias,
            out,
            group_size,
            h * w,
            channels // groups,
            groups,
            self.group_norm.eps,
            BLOCK=triton.next_power_of_2(group_size),
        )
        return out
