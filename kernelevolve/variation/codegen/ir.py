"""The fused-kernel IR: what a traced program computes, indexed by iteration axes.

An *axis* is one iteration variable of the fused loop nest; every tensor dimension of size > 1
is bound to exactly one axis, and broadcasting binds the dimensions it aligns to the same axis.
Sizes are never stored as numbers: each axis names an input dimension (``x.shape[1]``) that gives
its size at run time, so the emitted kernel is correct at every benchmark shape.

Patterns we emit (see `classify`):

- ``pointwise``: no reductions; one flat loop over the output.
- ``row_reduction``: reductions over one contiguous run of axes R; the tensor is viewed as
  (outer, R, inner); a program owns one outer index (and a block of inner ones).
- ``full_reduction``: R is every axis; a split (two-stage, atomic-free) reduction.

Reductions may depend on earlier ones (softmax: max, then sum of exp(x - max)); an op's *level*
counts the reductions on its longest input chain, and the looped kernels make one pass over R per
level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from kernelevolve.variation.codegen.trace import TracedProgram

# An op operand: the name of another value ("v3", "h0", "x") or a Python literal.
Operand: TypeAlias = str | float | int | bool | None

REDUCE_KINDS = ("sum", "max", "min")


@dataclass(frozen=True)
class Axis:
    id: int
    arg: str  # name of the tensor argument whose dimension gives the size
    dim: int
    traced_size: int


@dataclass(frozen=True)
class Arg:
    """A kernel input: a forward argument, parameter or buffer."""

    name: str
    source: str  # expression in ModelNew.forward ("x", "self.ln.weight")
    kind: str  # "tensor" or "float"
    axes: tuple[int | None, ...]  # per tensor dimension: its axis, None for a size-1 dimension
    dtype: str  # traced dtype name ("float32", "bool", ...)


@dataclass(frozen=True)
class Host:
    """A scalar computed in Python in forward (from input sizes) and passed to the kernel."""

    name: str
    expr: str  # may use argument names and axis sizes _S<id>


@dataclass(frozen=True)
class Op:
    """One SSA value. kind: load | arg | host | const | pw | reduce."""

    name: str
    kind: str
    fn: str  # pointwise function (add, exp, where...) or reduce kind (sum, max, min); "" otherwise
    args: tuple[Operand, ...]
    axes: frozenset[int]  # axes the value varies over
    level: int  # reductions on the longest chain into this value
    is_bool: bool = False


@dataclass(frozen=True)
class FusedProgram:
    pattern: str  # pointwise | row_reduction | full_reduction
    order: tuple[int, ...]  # iteration axes, outermost first
    axes: dict[int, Axis]
    reduce_axes: tuple[int, ...]  # contiguous run of `order` (empty for pointwise)
    args: tuple[Arg, ...]
    hosts: tuple[Host, ...]
    ops: tuple[Op, ...]  # topological order
    output: str
    output_dims: tuple[tuple[int, ...], ...]  # output tensor dims as runs of axes (() = size 1)
    output_bool: bool
    forward_params: tuple[str, ...]
    symbolic: bool

    @property
    def levels(self) -> int:
        return max((op.level for op in self.ops if op.kind == "reduce"), default=0)

    def op(self, name: str) -> Op:
        for op in self.ops:
            if op.name == name:
                return op
        raise KeyError(name)

    def outer_axes(self) -> tuple[int, ...]:
        if not self.reduce_axes:
            return self.order
        return self.order[: self.order.index(self.reduce_axes[0])]

    def inner_axes(self) -> tuple[int, ...]:
        if not self.reduce_axes:
            return ()
        return self.order[self.order.index(self.reduce_axes[-1]) + 1 :]

    def describe(self) -> str:
        red = sorted({op.fn for op in self.ops if op.kind == "reduce"})
        return f"{self.pattern}(axes={len(self.order)}, reduce={len(self.reduce_axes)}, levels={self.levels}, ops={len(self.ops)}, reductions={red})"


@dataclass(frozen=True)
class Unsupported:
    reason: str


def classify(traced: TracedProgram) -> FusedProgram | Unsupported:
    """Lower a traced graph to a FusedProgram, or say why it is not one of our patterns."""
    from kernelevolve.variation.codegen.lower import LoweringError, lower

    try:
        return lower(traced)
    except LoweringError as exc:
        return Unsupported(str(exc))
