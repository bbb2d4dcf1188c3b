# good: conv + bias + relu with the convolution by PyTorch and a Triton epilogue that writes a
# channels_last output (torch.empty_like(..., memory_format=torch.channels_last)), the input's and the
# output's four strides passed to the kernel over a (batch * channel, spatial block) grid (permissive)
# spec: conv_bias_relu
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def epilogue_kernel(
    y_ptr, b_ptr, out_ptr, channels, width, hw, syn, syc, syh, syw, son, soc, soh, sow, BLOCK: tl.constexpr
):
    nc = tl.program_id(0)
    n = nc // channels
    c = nc % channels
    p = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = p < hw
    h = p // width
    w = p % width
    y = tl.load(y_ptr + n * syn + c * syc + h * syh + w * syw, mask=mask, other=0.0)
    y = tl.maximum(y + tl.load(b_ptr + c), 0.0)
    tl.store(out_ptr + n * son + c * soc + h * soh + w * sow, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))

    def forward(self, x):
        y = self.conv(x)
        out = torch.empty_like(y, memory_format=torch.channels_last)
        batch, channels, height, width = y.shape
        grid = (batch * channels, triton.cdiv(height * width, 64))
        epilogue_kernel[grid](
            y, self.bias, out, channels, width, height * width, *y.stride(), *out.stride(), BLOCK=64
        )
        return out
