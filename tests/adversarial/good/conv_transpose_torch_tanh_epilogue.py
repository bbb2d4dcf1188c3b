# good: KernelBench level-2 ConvTranspose2d (stride 2, padding 1) by the module, then subtract the model's
# bias, tanh and scale in one Triton epilogue over the NCHW output (permissive: PyTorch does the conv)
# spec: kb_conv_transpose_tanh
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_tanh_scale_kernel(y_ptr, b_ptr, out_ptr, n, hw, channels, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = (offs // hw) % channels
    v = tl.load(y_ptr + offs, mask=mask, other=0.0) - tl.load(b_ptr + c, mask=mask, other=0.0)
    e = tl.exp(-2.0 * tl.abs(v))
    t = (1.0 - e) / (1.0 + e)
    t = tl.where(v < 0, -t, t)
    tl.store(out_ptr + offs, t * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, scale):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding
        )
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))
        self.scale = scale

    def forward(self, x):
        y = self.conv_transpose(x).contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        BLOCK = 256
        bias_tanh_scale_kernel[(triton.cdiv(n, BLOCK),)](
            y, self.bias, out, n, y.shape[2] * y.shape[3], y.shape[1], self.scale, BLOCK=BLOCK
        )
        return out
