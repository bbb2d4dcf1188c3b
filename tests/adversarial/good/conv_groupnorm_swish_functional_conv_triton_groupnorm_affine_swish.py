# good: KernelBench level-2 Conv2d + GroupNorm + Swish, permissive: `F.conv2d` with the reference's conv
# weight and bias kept on `self.conv`, then one Triton program per (sample, group) computing the group's
# mean / variance in fp32 over a `triton.next_power_of_2` block and applying `self.group_norm.weight` /
# `.bias` and x * sigmoid(x) in the same pass; eps read from the module, `Optional` typing
# spec: kb_conv_groupnorm_swish
# strict: false
from typing import Optional

# ruff: noqa: UP006, UP035, UP045, SIM222 -- typing and guards as LLMs write them
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def groupnorm_swish_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, HW, G, eps, BLOCK: tl.constexpr):
    n = tl.program_id(0)
    g = tl.program_id(1)
    cpg = C // G
    group_size = cpg * HW
    base = n * C * HW + g * group_size
    offs = tl.arange(0, BLOCK)
    mask = offs < group_size
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / group_size
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / group_size
    rstd = 1.0 / tl.sqrt(var + eps)
    c = g * cpg + offs // HW
    w = tl.load(w_ptr + c, mask=mask, other=1.0)
    b = tl.load(b_ptr + c, mask=mask, other=0.0)
    y = d * rstd * w + b
    tl.store(y_ptr + base + offs, y * tl.sigmoid(y), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(groups, out_channels)

    def _norm_swish(self, x: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
        x = x.contiguous()
        N, C, H, W = x.shape
        G = self.group_norm.num_groups
        if out is None:
            out = torch.empty_like(x)
        block = triton.next_power_of_2((C // G) * H * W)
        groupnorm_swish_kernel[(N, G)](
            x,
            self.group_norm.weight,
            self.group_norm.bias,
            out,
            C,
            H * W,
            G,
            float(self.group_norm.eps),
            BLOCK=block,
        )
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.conv2d(x, self.conv.weight, self.conv.bias, stride=self.conv.stride, padding=self.conv.padding)
        return self._norm_swish(y)
