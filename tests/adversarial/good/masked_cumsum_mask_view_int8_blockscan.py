# good: cumsum of x * mask along dim 1 with the bool mask reinterpreted as int8 (mask.view(torch.int8),
# no copy), a block-wise tl.cumsum with the running carry between blocks, a non-contiguous input made
# contiguous inside (.contiguous() is free when it already is)
# spec: kb_masked_cumsum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def masked_cumsum_kernel(x_ptr, m_ptr, y_ptr, length, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = 0.0
    for c0 in range(0, length, BLOCK):
        offs = c0 + tl.arange(0, BLOCK)
        inb = offs < length
        x = tl.load(x_ptr + row * length + offs, mask=inb, other=0.0)
        keep = tl.load(m_ptr + row * length + offs, mask=inb, other=0) != 0
        kept = tl.where(keep, x, 0.0)
        run = tl.cumsum(kept, axis=0) + carry
        tl.store(y_ptr + row * length + offs, run, mask=inb)
        carry += tl.sum(kept, axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.dim != 1 or x.dim() != 2:
            raise ValueError("written for dim 1 of a 2-D input")
        x = x.contiguous()
        mask_bytes = mask.contiguous().view(torch.int8)
        y = torch.empty_like(x)
        masked_cumsum_kernel[(x.shape[0],)](x, mask_bytes, y, x.shape[1], BLOCK=16)
        return y
