# good: KernelBench level-2 style conv + bias + relu: the convolution by PyTorch (F.conv2d on the module's
# own nn.Conv2d parameters), the extra bias add and relu fused into one Triton epilogue over the NCHW
# output with the channel index computed from the flat offset (permissive: PyTorch does the conv)
# spec: conv_bias_relu
# strict: false
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(y_ptr, b_ptr, out_ptr, n, hw, channels, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = (offs // hw) % channels
    y = tl.load(y_ptr + offs, mask=mask, other=0.0) + tl.load(b_ptr + c, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        out = torch.empty_like(y, memory_format=torch.contiguous_format)
        n = y.numel()
        bias_relu_kernel[(triton.cdiv(n, 256),)](
            y, self.bias, out, n, y.shape[2] * y.shape[3], y.shape[1], BLOCK=256
        )
        return out
