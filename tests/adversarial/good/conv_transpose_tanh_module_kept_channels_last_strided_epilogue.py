# good: KernelBench level-2 ConvTranspose2d + bias subtract + tanh + scale, LLM style: the input moved to
# `channels_last`, `self.conv_transpose` kept and called (permissive), the (C, 1, 1) bias parameter read by a
# Triton epilogue that walks the output through its NCHW strides (whatever its memory format), the flat
# size and the four dims read into Python ints for the grid
# spec: kb_conv_transpose_tanh
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_bias_scale_kernel(
    y_ptr, bias_ptr, out_ptr, total, C, H, W, sn, sc, sh, sw, scale, BLOCK: tl.constexpr
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    w = offs % W
    h = (offs // W) % H
    c = (offs // (W * H)) % C
    n = offs // (W * H * C)
    ptrs = n * sn + c * sc + h * sh + w * sw
    v = tl.load(y_ptr + ptrs, mask=mask, other=0.0) - tl.load(bias_ptr + c, mask=mask, other=0.0)
    t = 2.0 * tl.sigmoid(2.0 * v) - 1.0
    tl.store(out_ptr + ptrs, t * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, scale):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding
        )
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))
        self.scale = scale

    def forward(self, x):
        x = x.to(memory_format=torch.channels_last)
        y = self.conv_transpose(x)
        N, C, H, W = (int(d) for d in y.shape)
        out = torch.empty_like(y)
        total = N * C * H * W
        tanh_bias_scale_kernel[(triton.cdiv(total, 256),)](
            y, self.bias, out, total, C, H, W, *y.stride(), float(self.scale), BLOCK=256
        )
        return out
