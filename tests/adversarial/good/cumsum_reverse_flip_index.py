# good: KernelBench level-1 reverse cumulative sum: one program per row loads the row in reverse order
# (index arithmetic, no flip copies), takes tl.cumsum and stores it back in reverse
# spec: kb_cumsum_reverse
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def reverse_cumsum_kernel(x_ptr, out_ptr, length, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < length
    src = length - 1 - offs
    x = tl.load(x_ptr + row * length + src, mask=mask, other=0.0)
    acc = tl.cumsum(x, axis=0)
    tl.store(out_ptr + row * length + src, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        assert self.dim in (1, -1) and x.dim() == 2
        x = x.contiguous()
        rows, length = x.shape
        out = torch.empty_like(x)
        reverse_cumsum_kernel[(rows,)](x, out, length, BLOCK=triton.next_power_of_2(length))
        return out
