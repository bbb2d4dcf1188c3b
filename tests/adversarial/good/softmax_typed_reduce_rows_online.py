# good: row softmax over any leading shape, typed the way library code is (from __future__ annotations,
# Optional, Tuple, a TypeAlias, Final), the row count from functools.reduce(operator.mul, ...) over the
# leading dims, an online max/sum pass in tl.range chunks and a second pass writing the output
# spec: shipped:softmax
from __future__ import annotations

import functools
import operator
from typing import Final, Optional, Tuple  # noqa: UP035 (the older spellings, on purpose)

import torch
import torch.nn as nn
import triton
import triton.language as tl
from typing_extensions import TypeAlias  # noqa: UP035

Shape: TypeAlias = Tuple[int, ...]  # noqa: UP006
MAX_BLOCK: Final[int] = 1024


@triton.jit
def softmax_online_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for c0 in tl.range(0, cols, BLOCK):
        offs = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * alpha + tl.where(x == float("-inf"), 0.0, tl.exp(x - m_new))
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    for c0 in tl.range(0, cols, BLOCK):
        offs = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=float("-inf")).to(tl.float32)
        tl.store(y_row + offs, tl.exp(x - row_max) / total, mask=offs < cols)


def _rows(shape: Shape) -> int:
    return functools.reduce(operator.mul, shape[:-1], 1)


def softmax_lastdim(x: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:  # noqa: UP045
    x = x.contiguous()
    if out is None:
        out = torch.empty_like(x)
    cols: int = x.shape[-1]
    block: int = min(MAX_BLOCK, triton.next_power_of_2(cols))
    softmax_online_kernel[(_rows(tuple(x.shape)),)](x, out, cols, BLOCK=block)
    return out


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_lastdim(x)
