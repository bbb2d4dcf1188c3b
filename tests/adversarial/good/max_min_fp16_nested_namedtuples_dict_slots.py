# good: (torch.max(x, 1), torch.min(x, 1)) on fp16 rows, two launches of one kernel (a constexpr picks max
# or min) writing into output slots kept in a dict, returned as a namedtuple of two
# `collections.namedtuple("ValuesIndices", "values indices")` results (a nested named-tuple structure)
# spec: kb_half_max_min
from collections import namedtuple

import torch
import torch.nn as nn
import triton
import triton.language as tl

ValuesIndices = namedtuple("ValuesIndices", "values indices")
MaxMin = namedtuple("MaxMin", "max min")


@triton.jit
def extreme_rows(x_ptr, v_ptr, i_ptr, n_cols, IS_MAX: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    if IS_MAX:
        best = tl.max(tl.where(mask, x, float("-inf")), axis=0)
    else:
        best = tl.min(tl.where(mask, x, float("inf")), axis=0)
    at = tl.min(tl.where(mask & (x == best), cols, BLOCK), axis=0)
    tl.store(v_ptr + row, best.to(v_ptr.dtype.element_ty))
    tl.store(i_ptr + row, at.to(tl.int64))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        rows, cols = x.shape
        slots = {}
        for name in ("max", "min"):
            slots[name] = ValuesIndices(
                torch.empty(rows, device=x.device, dtype=x.dtype),
                torch.empty(rows, device=x.device, dtype=torch.int64),
            )
            extreme_rows[(rows,)](
                x,
                slots[name].values,
                slots[name].indices,
                cols,
                IS_MAX=name == "max",
                BLOCK=triton.next_power_of_2(cols),
            )
        return MaxMin(slots["max"], slots["min"])
