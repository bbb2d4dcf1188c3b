"""The buckets a ranged spec recorded, read off a call's input shapes.

A shape case made from a range (`specs/shape_ranges.py`) stands for every size of its bucket, per
ranged constant ([from, to]). A call carries tensors, not constants, so each case's *layout* says where
its constants show in the inputs: the case's inputs are made (on the meta device) at its own sizes and,
one constant at a time, at another size; the dimensions that moved follow that constant, as
`scale * value` (or `scale * product` where several constants multiply into one dimension), and the
rest stay as they are. A call is in the case's bucket when its signature is the layout's at sizes
inside the bucket. Nothing is matched on names: only on the shapes the reference makes.

A case whose layout cannot be read this way (a constant no input shows, a dimension such as `n + 1`
that is no multiple of it, inputs whose rank or dtype change with a size) gets no layout; the
dispatcher then treats it as an unranged shape (its power-of-two bucket).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from kernelevolve.export.dispatch import Signature, signature
from kernelevolve.types import KernelSpec, ShapeCase

log = logging.getLogger(__name__)

SignatureAt = Callable[[ShapeCase], Signature | None]
Position = tuple[int, int]  # (input tensor, dimension)


@dataclass(frozen=True)
class Axis:
    """One input dimension that follows size constants: its size is `scale` times their product."""

    tensor: int
    dim: int
    constants: tuple[str, ...]
    scale: Fraction


@dataclass(frozen=True)
class RangeLayout:
    """Where a ranged shape case's constants show in its inputs, and the bucket each one covers."""

    shape: str
    signature: Signature  # the case's own inputs, at its representative sizes
    bucket: Mapping[str, tuple[int, int]]
    axes: tuple[Axis, ...]

    def sizes(self, sig: Signature) -> dict[str, int] | None:
        """The constants' values that make this layout's inputs `sig`, or None where no values do."""
        if [len(s) for s, _ in sig] != [len(s) for s, _ in self.signature]:
            return None
        values: dict[str, int] = {}
        for axis in (a for a in self.axes if len(a.constants) == 1):
            value = sig[axis.tensor][0][axis.dim] / axis.scale
            if value.denominator != 1 or values.setdefault(axis.constants[0], int(value)) != value:
                return None
        return values if self.signature_at(values) == sig else None

    def signature_at(self, values: Mapping[str, int]) -> Signature:
        """This layout's inputs with its constants at `values`."""
        shapes = [list(s) for s, _ in self.signature]
        for axis in self.axes:
            size = axis.scale * math.prod(values[c] for c in axis.constants)
            shapes[axis.tensor][axis.dim] = int(size) if size.denominator == 1 else -1
        return tuple((tuple(s), dtype) for s, (_, dtype) in zip(shapes, self.signature, strict=True))

    def contains(self, sig: Signature) -> bool:
        values = self.sizes(sig)
        return values is not None and all(lo <= values[c] <= hi for c, (lo, hi) in self.bucket.items())


def _moved(base: Signature, other: Signature) -> set[Position] | None:
    """The dimensions whose size differs; None where the inputs' count, ranks or dtypes differ."""
    if [(len(s), d) for s, d in base] != [(len(s), d) for s, d in other]:
        return None
    return {
        (t, i)
        for t, ((a, _), (b, _)) in enumerate(zip(base, other, strict=True))
        for i, (x, y) in enumerate(zip(a, b, strict=True))
        if x != y
    }


def _probe_sizes(case: ShapeCase, constant: str, spec: KernelSpec) -> list[int]:
    """Other sizes to make the case's inputs at: the search's other representatives (known to build),
    then the bucket's ends, then twice the case's size."""
    own = int(case.params[constant])
    searched = [s.params[constant] for s in spec.shapes if constant in s.bucket]
    ordered = [*searched, *case.bucket[constant], 2 * own]
    return [v for v in dict.fromkeys(int(v) for v in ordered) if v != own]


def derive_layout(case: ShapeCase, spec: KernelSpec, signature_at: SignatureAt) -> RangeLayout | None:
    """`case`'s layout (module docstring), or None where its inputs do not show its constants so."""
    base = signature_at(case)
    if base is None:
        return None
    own = {c: int(case.params[c]) for c in case.bucket}
    probes: dict[str, tuple[int, Signature]] = {}
    followers: dict[Position, list[str]] = {}
    for constant in case.bucket:
        for size in _probe_sizes(case, constant, spec):
            other = signature_at(replace(case, params={**case.params, constant: size}))
            if other is not None:
                break
        else:
            return None
        moved = _moved(base, other)
        if not moved:  # the constant shows in no input (or changes ranks or dtypes)
            return None
        probes[constant] = (size, other)
        for position in moved:
            followers.setdefault(position, []).append(constant)
    axes = []
    for (tensor, dim), constants in sorted(followers.items()):
        scale = Fraction(base[tensor][0][dim], math.prod(own[c] for c in constants))
        for constant in constants:  # a dimension such as n + 1 is no multiple of n: no layout
            size, other = probes[constant]
            expected = scale * math.prod(size if c == constant else own[c] for c in constants)
            if expected != other[tensor][0][dim]:
                return None
        axes.append(Axis(tensor, dim, tuple(constants), scale))
    if {a.constants[0] for a in axes if len(a.constants) == 1} != set(own):
        return None  # a constant seen only in products cannot be read back from one call
    bucket = {c: (int(lo), int(hi)) for c, (lo, hi) in case.bucket.items()}
    return RangeLayout(case.name, base, bucket, tuple(axes))


def input_signatures(spec: KernelSpec) -> SignatureAt:
    """The signature of the reference's inputs at any shape case (made on the meta device); None where
    the reference cannot make them there or they are not all tensors."""
    import torch

    from kernelevolve.specs import reference

    namespace = reference.load_reference(spec.reference_source)
    dtype = reference.torch_dtype(spec.dtype)

    def at(case: ShapeCase) -> Signature | None:
        try:
            reference.apply_shape(namespace, case)
            with torch.device("meta"):
                inputs: Any = reference.to_device(list(namespace.get_inputs()), "meta", dtype)
        except Exception as exc:  # a size the reference refuses: that probe is not used
            log.debug("%s: no inputs at %s: %s", spec.name, case.params, exc)
            return None
        return signature(inputs) if all(isinstance(t, torch.Tensor) for t in inputs) else None

    return at


def range_layouts(spec: KernelSpec, signature_at: SignatureAt | None = None) -> tuple[RangeLayout, ...]:
    """The layout of every ranged case of `spec` whose constants its inputs show (module docstring)."""
    ranged = [case for case in spec.shapes if case.bucket]
    if not ranged:
        return ()
    signature_at = signature_at or input_signatures(spec)
    layouts = []
    for case in ranged:
        layout = derive_layout(case, spec, signature_at)
        if layout is None:
            log.info(
                "%s: shape %s's sizes are not read from its inputs; power-of-two bucket", spec.name, case.name
            )
        else:
            layouts.append(layout)
    return tuple(layouts)
