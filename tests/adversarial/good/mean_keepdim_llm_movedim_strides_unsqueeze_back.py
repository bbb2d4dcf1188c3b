# good: KernelBench level-1 mean over a dim with keepdim: dim read from the init inputs into `self.dim`,
# normalised with `dim % x.ndim`, the tensor viewed as (outer, reduce, inner) after `contiguous()`, one
# program per (outer, inner block) looping over the reduced axis with `tl.range`; output allocated
# keepdim-shaped via `list(x.shape)`; docstrings, typing, `math.prod`
# spec: kb_mean_keepdim
import math
from typing import List

# ruff: noqa: UP006, UP035, UP045, SIM222 -- typing and guards as LLMs write them
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_middle_kernel(x_ptr, y_ptr, R, INNER, BLOCK_I: tl.constexpr):
    outer = tl.program_id(0)
    ib = tl.program_id(1)
    offs = ib * BLOCK_I + tl.arange(0, BLOCK_I)
    mask = offs < INNER
    acc = tl.zeros((BLOCK_I,), dtype=tl.float32)
    base = outer * R * INNER
    for r in tl.range(0, R):
        acc += tl.load(x_ptr + base + r * INNER + offs, mask=mask, other=0.0)
    tl.store(y_ptr + outer * INNER + offs, acc / R, mask=mask)


def _split(shape: List[int], dim: int) -> tuple:
    """(outer, reduce, inner) sizes around `dim`."""
    return math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1 :])


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = self.dim % x.ndim
        x = x.contiguous()
        outer, r, inner = _split(list(x.shape), dim)
        out_shape = list(x.shape)
        out_shape[dim] = 1
        y = torch.empty(out_shape, device=x.device, dtype=x.dtype)
        block_i = min(128, triton.next_power_of_2(max(inner, 1)))
        mean_middle_kernel[(outer, triton.cdiv(inner, block_i))](x, y, r, inner, BLOCK_I=block_i)
        return y
