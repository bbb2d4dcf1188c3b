# good: bucketize (right=False) by counting, for each value, the boundaries strictly below it: a block of
# values against the whole (padded) boundary vector, tl.sum of a 2-D comparison, stored as int64; the
# boundary block size from an lru_cache'd helper of the boundary count; the output made by
# torch.empty(..., dtype=torch.int64)
# spec: shipped:bucketize
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def count_below(x_ptr, b_ptr, out_ptr, n, nb, BLOCK: tl.constexpr, NB: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    j = tl.arange(0, NB)
    b = tl.load(b_ptr + j, mask=j < nb, other=float("inf"))
    below = (b[None, :] < x[:, None]).to(tl.int64)
    tl.store(out_ptr + offs, tl.sum(below, axis=1), mask=mask)


@functools.lru_cache(maxsize=64)
def boundary_block(num_boundaries: int) -> int:
    return max(16, triton.next_power_of_2(num_boundaries))


class ModelNew(nn.Module):
    def __init__(self, num_boundaries: int):
        super().__init__()
        self.register_buffer("boundaries", torch.linspace(-3.0, 3.0, num_boundaries))

    def forward(self, values):
        x = values.contiguous()
        out = torch.empty(x.shape, dtype=torch.int64, device=x.device)
        n, nb = x.numel(), self.boundaries.numel()
        count_below[(triton.cdiv(n, 32),)](x, self.boundaries, out, n, nb, BLOCK=32, NB=boundary_block(nb))
        return out
