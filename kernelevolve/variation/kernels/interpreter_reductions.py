"""Inductor's max2/min2 reductions for Triton's interpreter (render.py's `for_interpreter` calls these in
their place): the interpreter calls a Python combine function once per element, so these reduce with its
builtin max and min, NaN-propagating as Inductor's are. `# fmt: off` keeps the layout candidates have.
"""
# fmt: off

import triton
import triton.language as tl


@triton.jit
def _ke_interp_max2(a, dim):
    if a.dtype.is_floating():
        return tl.where(tl.max((a != a).to(tl.int8), dim) > 0, float("nan"), tl.max(a, dim))
    return tl.max(a, dim)


@triton.jit
def _ke_interp_min2(a, dim):
    if a.dtype.is_floating():
        return tl.where(tl.max((a != a).to(tl.int8), dim) > 0, float("nan"), tl.min(a, dim))
    return tl.min(a, dim)
