"""A spec's structure: what its reference computes, with the sizes left out, as a short key.

Two specs have the same structure when their traced programs (`traced_program.py`) make the same ATen ops
in the same order, wired the same way (each op's tensor arguments from the same forward inputs, model
state or earlier ops), with the same non-size arguments (dims, flags, modes, epsilons), on inputs and
state of the same ranks, and return the same op's result. Sizes are left out (input shapes, constructor
arguments, and the int arguments of ATen's schemas that carry sizes: a view's size, a slice's bounds): a
kernel that won at one size of a program is a fair start at another size of the same program, and no start
at all for another program, whatever its name or text. Past-win replay proposes a win only for a spec of
its structure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from kernelevolve.specs.traced_families import cached_program
from kernelevolve.specs.traced_program import TracedOp, TracedProgram
from kernelevolve.types import KernelSpec

# Int arguments that say which axes an op works on (negative ones counted from the front).
_AXIS_ARGUMENTS = frozenset({"dim", "dims", "dim0", "dim1", "start_dim", "end_dim"})
# Int arguments of ATen's schemas that carry sizes (views, new tensors, slices, splits): left out.
_SIZE_ARGUMENTS = frozenset(
    {
        "size",
        "sizes",
        "shape",
        "stride",
        "storage_offset",
        "start",
        "end",
        "step",
        "length",
        "index",
        "split_size",
        "split_sizes",
        "repeats",
        "output_size",
        "minlength",
    }
)


def _is_ints(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_is_ints(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool)


def _kept(name: str, value: Any) -> bool:
    """Whether an op's argument is part of its structure: anything but a size."""
    return not (name in _SIZE_ARGUMENTS and _is_ints(value))


def _rank_of(source: str, program: TracedProgram, state: Mapping[str, int]) -> int | None:
    """The rank of the tensor an op argument came from ("in0", "op2", "op2[1]", "state:weight")."""
    if source.startswith("in") and source[2:].isdigit():
        shape = program.input_shapes[int(source[2:])]
        return None if shape is None else len(shape)
    if source.startswith("state:"):
        return state.get(source.removeprefix("state:"))
    if source.startswith("op"):
        index, _, output = source[2:].partition("[")
        if index.isdigit() and int(index) < len(program.ops):
            shapes = program.ops[int(index)].shapes
            shape = shapes[int(output.rstrip("]") or 0)] if shapes else None
            return None if shape is None else len(shape)
    return None


def _axes(value: Any, rank: int | None) -> Any:
    """An axis argument with negative axes counted from the front (dim=-1 of a 2-D input is dim=1)."""
    if isinstance(value, (list, tuple)):
        return [_axes(v, rank) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and value < 0 and rank:
        return value + rank
    return value


def _op_text(op: TracedOp, program: TracedProgram, state: Mapping[str, int]) -> str:
    rank = _rank_of(op.sources[0], program, state) if op.sources else None
    arguments = sorted(
        (k, repr(_axes(v, rank) if k in _AXIS_ARGUMENTS else v))
        for k, v in op.arguments.items()
        if _kept(k, v)
    )
    return f"{op.name}{op.sources}{arguments}"


def program_structure(program: TracedProgram) -> str:
    """The structure key of a traced program (hex, 16 characters)."""
    ranks = tuple(None if shape is None else len(shape) for shape in program.input_shapes)
    state = {name: len(shape) for name, shape in program.state}
    text = "\n".join(
        [
            f"inputs {ranks} state {sorted(state.items())} output {program.output}",
            *(_op_text(op, program, state) for op in program.ops),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def structure_of(code: str, params: Mapping[str, Any] | None = None) -> str:
    """The structure key of a reference at these size constants; "" where it cannot be traced (a spec
    without a structure matches nothing)."""
    program = cached_program(code, params)
    return program_structure(program) if program is not None else ""


def spec_structure(spec: KernelSpec) -> str:
    """The spec's structure key, "" unless every shape case traces to the same one (a shape that changes
    what the reference computes, through a rank or a flag constant, is not one program)."""
    keys = {structure_of(spec.reference_source, shape.params) for shape in spec.shapes}
    return keys.pop() if len(keys) == 1 else ""
