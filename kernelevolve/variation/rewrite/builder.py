"""Inserting new torch calls into an FX graph at one point, with Python numbers folded on the spot.

An operand is an FX node or a Python number; arithmetic on two numbers (or by 1, or adding 0) makes no
node, so a rewrite of `y * 2 / 4` writes one constant, not a chain of them.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
import torch.fx as fx

Operand = fx.Node | int | float


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Builder:
    """New nodes go right before `anchor` (every node they read precedes it)."""

    def __init__(self, graph_module: fx.GraphModule, anchor: fx.Node) -> None:
        self.graph_module = graph_module
        self.graph = graph_module.graph
        self.anchor = anchor

    def call(self, target: Any, *args: Any, **kwargs: Any) -> fx.Node:
        with self.graph.inserting_before(self.anchor):
            return self.graph.call_function(target, args, kwargs)

    def method(self, name: str, *args: Any, **kwargs: Any) -> fx.Node:
        with self.graph.inserting_before(self.anchor):
            return self.graph.call_method(name, args, kwargs)

    def attr(self, path: str) -> fx.Node:
        """A parameter or buffer of the model (`self.gemm.weight`)."""
        with self.graph.inserting_before(self.anchor):
            return self.graph.get_attr(path)

    def mul(self, a: Operand | None, b: Operand | None) -> Operand | None:
        """a * b, where None stands for "no factor" (1) on either side."""
        if a is None or (is_number(a) and a == 1):
            return b
        if b is None or (is_number(b) and b == 1):
            return a
        if is_number(a) and is_number(b):
            return a * b  # type: ignore[operator]
        return self.call(operator.mul, a, b)

    def div(self, a: Operand | None, b: Operand) -> Operand | None:
        if a is None:
            return self.reciprocal(b)
        if is_number(b) and b == 1:
            return a
        if is_number(a) and is_number(b):
            return a / b  # type: ignore[operator]
        return self.call(operator.truediv, a, b)

    def reciprocal(self, a: Operand) -> Operand:
        return 1.0 / a if is_number(a) else self.call(operator.truediv, 1.0, a)  # type: ignore[operator]

    def add(self, a: Operand | None, b: Operand | None) -> Operand | None:
        """a + b, where None stands for "no term" (0) on either side."""
        if a is None or (is_number(a) and a == 0):
            return b
        if b is None or (is_number(b) and b == 0):
            return a
        if is_number(a) and is_number(b):
            return a + b  # type: ignore[operator]
        return self.call(operator.add, a, b)

    def neg(self, a: Operand | None) -> Operand | None:
        if a is None:
            return None
        return -a if is_number(a) else self.call(operator.neg, a)  # type: ignore[operator]

    def product(self, factors: list[Operand]) -> Operand | None:
        out: Operand | None = None
        for factor in factors:
            out = self.mul(out, factor)
        return out

    def sum_keepdim(self, value: fx.Node, dims: tuple[int, ...]) -> fx.Node:
        return self.call(torch.sum, value, list(dims), keepdim=True) if dims else value

    def squeeze(self, value: Operand, dims: tuple[int, ...]) -> Operand:
        return self.call(torch.squeeze, value, dims) if dims and isinstance(value, fx.Node) else value


def count(shape: tuple[int, ...], dims: tuple[int, ...]) -> int:
    return math.prod(shape[d] for d in dims)
