# good: softmax over the last dim of any rank: out shape from tuple arithmetic on x.shape, rows from
# math.prod(x.shape[:-1]), a view(*lead, cols), x.dtype.itemsize and element_size() used for a block cap
# spec: softmax
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    MAX_BYTES = 64 * 1024

    def forward(self, x):
        *lead, cols = x.shape
        rows = math.prod(lead)
        block = triton.next_power_of_2(cols)
        assert block * x.element_size() <= self.MAX_BYTES and x.dtype.itemsize in (2, 4)
        x2 = x.contiguous().view(rows, cols)
        out = torch.empty(tuple(lead) + (cols,), device=x.device, dtype=x.dtype)
        softmax_kernel[(rows,)](x2, out, cols, BLOCK=block)
        return out.view(*lead, cols)
