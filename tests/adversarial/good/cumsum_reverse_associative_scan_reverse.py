# good: reverse cumulative sum with tl.associative_scan(reverse=True) and a @triton.jit combine function,
# over chunks walked from the end of the row with the running sum of the chunks to the right carried in
# spec: kb_cumsum_reverse
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def reverse_cumsum_kernel(x_ptr, y_ptr, length, n_chunks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = tl.zeros((), tl.float32)
    for i in range(0, n_chunks):
        start = (n_chunks - 1 - i) * BLOCK
        offs = start + tl.arange(0, BLOCK)
        inb = offs < length
        x = tl.load(x_ptr + row * length + offs, mask=inb, other=0.0)
        suffix = tl.associative_scan(x, 0, _add, reverse=True) + carry
        tl.store(y_ptr + row * length + offs, suffix, mask=inb)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dim not in (1, -1) or x.dim() != 2:
            raise ValueError("written for the last dim of a 2-D input")
        x = x.contiguous()
        y = torch.empty_like(x)
        block = 16
        reverse_cumsum_kernel[(x.shape[0],)](x, y, x.shape[1], triton.cdiv(x.shape[1], block), BLOCK=block)
        return y
