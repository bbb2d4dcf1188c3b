# good: torch.max over the last dim with its indices, written the way typed library code returns two
# outputs: a typing.NamedTuple (values, indices) built by the launcher, the indices int64 (the first
# maximum, as torch), the input made contiguous inside, the outputs from x.new_empty
# spec: kb_max_with_indices
from typing import NamedTuple

import torch
import torch.nn as nn
import triton
import triton.language as tl


class MaxResult(NamedTuple):
    values: torch.Tensor
    indices: torch.Tensor


@triton.jit
def max_last_dim_kernel(x_ptr, val_ptr, idx_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=float("-inf"))
    best = tl.max(x, axis=0)
    first = tl.min(tl.where(x == best, offs, BLOCK), axis=0)
    tl.store(val_ptr + row, best)
    tl.store(idx_ptr + row, first.to(tl.int64))


def max_last_dim(x: torch.Tensor) -> MaxResult:
    x = x.contiguous()
    cols = x.shape[-1]
    lead = x.shape[:-1]
    values = x.new_empty(lead)
    indices = x.new_empty(lead, dtype=torch.int64)
    rows = values.numel()
    max_last_dim_kernel[(rows,)](x, values, indices, cols, BLOCK=triton.next_power_of_2(cols))
    return MaxResult(values, indices)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> MaxResult:
        if self.dim not in (-1, x.dim() - 1):
            raise ValueError("only the last dimension is written here")
        return max_last_dim(x)
