# good: KernelBench level-1 cumulative product: tl.associative_scan with a multiply combine function, one
# program per row, the padding lanes loaded as 1.0
# spec: kb_cumprod
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mul_combine(a, b):
    return a * b


@triton.jit
def cumprod_kernel(x_ptr, out_ptr, length, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < length
    x = tl.load(x_ptr + row * length + offs, mask=mask, other=1.0)
    tl.store(out_ptr + row * length + offs, tl.associative_scan(x, 0, mul_combine), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        rows, length = x.shape
        out = torch.empty_like(x)
        cumprod_kernel[(rows,)](x, out, length, BLOCK=triton.next_power_of_2(length))
        return out
