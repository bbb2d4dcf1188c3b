# good: KernelBench level-2 ConvTranspose2d + (x - bias) + tanh + scale, permissive: the reference's
# `nn.ConvTranspose2d` kept and called through `F.conv_transpose2d(x, self.conv_transpose.weight, ...)` with
# its stride / padding read from the module, the epilogue in one Triton kernel over (n*c, hw blocks);
# tanh written as 2*sigmoid(2x)-1, `import math`, `Optional` typing, in-place epilogue on the fresh conv
# output
# spec: kb_conv_transpose_tanh
# strict: false
import math
from typing import Optional

# ruff: noqa: UP006, UP035, UP045, SIM222 -- typing and guards as LLMs write them
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def bias_tanh_scale_inplace_kernel(y_ptr, bias_ptr, C, HW, scale, BLOCK: tl.constexpr):
    nc = tl.program_id(0)
    hb = tl.program_id(1)
    c = nc % C
    offs = hb * BLOCK + tl.arange(0, BLOCK)
    mask = offs < HW
    ptrs = y_ptr + nc * HW + offs
    v = tl.load(ptrs, mask=mask, other=0.0) - tl.load(bias_ptr + c)
    t = 2.0 * tl.sigmoid(2.0 * v) - 1.0
    tl.store(ptrs, t * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, scale):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding
        )
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))
        self.scale = scale

    def _epilogue(self, y: torch.Tensor, block: Optional[int] = None) -> torch.Tensor:
        """y <- tanh(y - bias) * scale, in place on the conv's fresh output."""
        y = y.contiguous()
        N, C, H, W = y.shape
        hw = H * W
        block = block or min(256, triton.next_power_of_2(hw))
        grid = (N * C, math.ceil(hw / block))
        bias_tanh_scale_inplace_kernel[grid](y, self.bias.view(-1), C, hw, float(self.scale), BLOCK=block)
        return y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ct = self.conv_transpose
        y = F.conv_transpose2d(
            x.contiguous(),
            ct.weight,
            ct.bias,
            stride=ct.stride,
            padding=ct.padding,
            output_padding=ct.output_padding,
            groups=ct.groups,
            dilation=ct.dilation,
        )
        return self._epilogue(y)
