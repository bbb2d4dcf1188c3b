"""A module's own counter stepped by a Python int (`self.num_batches_tracked.add_(1)` or `+= 1`, as
nn.BatchNorm's forward moves it in training mode): no compute for strict mode's static checks.

The runner's op trace lets the same step through only for a 0-d integer tensor that is not a view
(`strict_ops._counter_step`), so here the form is what is checked: the receiver an attribute reached
from the method's `self` (module state, not a tensor derived from the inputs), the step an int literal.
"""

from __future__ import annotations

import ast
from collections.abc import Callable


def is_counter_step(target: ast.expr, step: ast.expr, is_self: Callable[[ast.AST], bool]) -> bool:
    """Whether `target.add_(step)` / `target += step` is such a step (the caller checks the operator)."""
    if not (isinstance(step, ast.Constant) and type(step.value) is int):
        return False  # not a bool, a float or a tensor: only an integer count moves this way
    if not isinstance(target, ast.Attribute):
        return False
    root: ast.expr = target
    while isinstance(root, ast.Attribute):
        root = root.value
    return is_self(root)
