# good: KernelBench level-1 masked cumulative sum: a torch.bool mask input loaded by the kernel (int1
# pointer), x zeroed where the mask is false, tl.cumsum along the row
# spec: kb_masked_cumsum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def masked_cumsum_kernel(x_ptr, m_ptr, out_ptr, length, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    inb = offs < length
    x = tl.load(x_ptr + row * length + offs, mask=inb, other=0.0)
    keep = tl.load(m_ptr + row * length + offs, mask=inb, other=0)
    x = tl.where(keep != 0, x, 0.0)
    tl.store(out_ptr + row * length + offs, tl.cumsum(x, axis=0), mask=inb)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, mask):
        x = x.contiguous()
        mask = mask.contiguous()
        rows, length = x.shape
        out = torch.empty_like(x)
        masked_cumsum_kernel[(rows,)](x, mask, out, length, BLOCK=triton.next_power_of_2(length))
        return out
