"""Template families recognised from what a reference does, not how it is written.

The reference is built as its problem builds it (`Model(*get_init_inputs())`) and called once on meta
tensors while a dispatch mode records every ATen op with its arguments, schema defaults filled in. A family
is a short canonical op sequence over the forward's inputs whose parameters are the values the template's
`ModelNew` takes from the same constructor arguments: `torch.argmax(x, dim=self.dim)`, `x.argmax(self.dim)`
and `torch.argmax(input=x, dim=d)` are one program. Evidence: experiments/traced_families.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kernelevolve.reference_module import load_reference_module
from kernelevolve.tracing import TRACING_LOCK


@dataclass(frozen=True)
class TracedOp:
    """One ATen op: its name ("argmax.default"), where each tensor argument came from ("in0" a forward
    input, "op2" the third op's output, "const" anything else), and its other arguments by name."""

    name: str
    sources: tuple[str, ...]
    arguments: dict[str, Any]


@dataclass(frozen=True)
class TracedProgram:
    ops: tuple[TracedOp, ...]
    init: tuple[Any, ...]  # the constructor's arguments
    input_shapes: tuple[tuple[int, ...] | None, ...]  # None: not a tensor
    output: str  # where the forward's result came from ("op3", or "op3[0]" for an op's first output)


def trace_program(code: str) -> TracedProgram | None:
    """The reference's traced program, or None where it cannot be built or run on meta tensors."""
    import torch

    try:
        module = load_reference_module(code)
        init = tuple(module.get_init_inputs())
        with TRACING_LOCK, torch.device("meta"):
            model = module.Model(*init)
            inputs = list(module.get_inputs())
            recorder = _Recorder(inputs)
            with recorder, torch.no_grad():
                result = model(*inputs)
    except Exception:  # noqa: BLE001 - a reference meta tensors cannot run gets no traced family
        return None
    output = recorder.source(result) if isinstance(result, torch.Tensor) else "other"
    shapes = tuple(tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in inputs)
    return TracedProgram(tuple(recorder.ops), init, shapes, output)


def _recorder_base() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


class _Recorder(_recorder_base()):  # type: ignore[misc]
    def __init__(self, inputs: Sequence[Any]) -> None:
        super().__init__()
        self.ops: list[TracedOp] = []
        self._sources = {id(x): f"in{i}" for i, x in enumerate(inputs)}
        self._keep = list(inputs)  # ids stay valid while the tensors live

    def source(self, value: Any) -> str:
        return self._sources.get(id(value), "const")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        import torch

        kwargs = kwargs or {}
        named = _named_arguments(func, args, kwargs)
        sources = tuple(self.source(v) for v in _tensors(list(args) + list(kwargs.values())))
        others = {k: _plain(v) for k, v in named.items() if not _is_tensors(v)}
        result = func(*args, **kwargs)
        index = len(self.ops)
        self.ops.append(TracedOp(str(func).removeprefix("aten."), sources, others))
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        for k, out in enumerate(outputs):
            if isinstance(out, torch.Tensor):
                self._sources[id(out)] = f"op{index}" if len(outputs) == 1 else f"op{index}[{k}]"
                self._keep.append(out)
        return result


def _named_arguments(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Every schema argument by name, defaults filled in (the dispatcher drops arguments left at them)."""
    named: dict[str, Any] = {}
    for position, argument in enumerate(func._schema.arguments):
        if position < len(args) and not argument.kwarg_only:
            named[argument.name] = args[position]
        elif argument.name in kwargs:
            named[argument.name] = kwargs[argument.name]
        elif argument.has_default_value():
            named[argument.name] = argument.default_value
    return named


def _tensors(values: Sequence[Any]) -> list[Any]:
    import torch

    found: list[Any] = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(_tensors(value))
    return found


def _is_tensors(value: Any) -> bool:
    return bool(_tensors([value]))


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# ------------------------------------------------------------------------------------------ families


def _dim(program: TracedProgram) -> int | None:
    """The one constructor argument the dim templates take (`ModelNew(dim)`), where it is an int."""
    if len(program.init) == 1 and isinstance(program.init[0], int) and not isinstance(program.init[0], bool):
        return program.init[0]
    return None


def _one_op(program: TracedProgram, name: str, output: str = "op0") -> TracedOp | None:
    if len(program.ops) == 1 and program.ops[0].name == name and program.ops[0].sources == ("in0",):
        return program.ops[0] if program.output == output else None
    return None


def _reduction(name: str, keepdim: bool, output: str = "op0") -> Callable[[TracedProgram], bool]:
    def matches(program: TracedProgram) -> bool:
        op, dim = _one_op(program, name, output), _dim(program)
        if op is None or dim is None:
            return False
        wanted = op.arguments.get("dim")
        return (
            wanted in (dim, [dim])
            and op.arguments.get("keepdim", False) is keepdim
            and not op.arguments.get("dtype")
        )

    return matches


def _scan(name: str) -> Callable[[TracedProgram], bool]:
    def matches(program: TracedProgram) -> bool:
        op, dim = _one_op(program, name), _dim(program)
        return (
            op is not None
            and dim is not None
            and op.arguments.get("dim") == dim
            and not op.arguments.get("dtype")
        )

    return matches


def _reverse_cumsum(program: TracedProgram) -> bool:
    dim = _dim(program)
    ops = program.ops
    if dim is None or [op.name for op in ops] != ["flip.default", "cumsum.default", "flip.default"]:
        return False
    flips_ok = all(op.arguments.get("dims") == [dim] for op in (ops[0], ops[2]))
    chained = ops[0].sources == ("in0",) and ops[1].sources == ("op0",) and ops[2].sources == ("op1",)
    return flips_ok and chained and ops[1].arguments.get("dim") == dim and program.output == "op2"


def _softmax(program: TracedProgram) -> bool:
    """Row softmax of a 2-D input (the templates' rows)."""
    op = _one_op(program, "_softmax.default")
    shape = program.input_shapes[0] if program.input_shapes else None
    if op is None or program.init or shape is None or len(shape) != 2:
        return False
    return op.arguments.get("dim") in (1, -1) and op.arguments.get("half_to_float") is False


def _l1norm_dim1(program: TracedProgram) -> bool:
    ops = program.ops
    if program.init or [op.name for op in ops] != ["abs.default", "mean.dim", "div.Tensor"]:
        return False
    reduced = ops[1].arguments.get("dim") == [1] and ops[1].arguments.get("keepdim") is True
    chained = ops[0].sources == ("in0",) and ops[1].sources == ("op0",) and ops[2].sources == ("in0", "op1")
    return reduced and chained and program.output == "op2"


def _l2norm_dim1(program: TracedProgram) -> bool:
    ops = program.ops
    if program.init or [op.name for op in ops] != ["linalg_vector_norm.default", "div.Tensor"]:
        return False
    norm = ops[0].arguments
    exact = (
        norm.get("ord") == 2
        and norm.get("dim") == [1]
        and norm.get("keepdim") is True
        and not norm.get("dtype")
    )
    chained = ops[0].sources == ("in0",) and ops[1].sources == ("in0", "op0")
    return exact and chained and program.output == "op1"


def _matvec(program: TracedProgram) -> bool:
    """(M, K) @ (K, 1); the same product at other sizes is a GEMM, which the matvec template refuses."""
    ops, shapes = program.ops, program.input_shapes
    if program.init or len(ops) != 1 or ops[0].name != "mm.default" or ops[0].sources != ("in0", "in1"):
        return False
    a, b = (shapes + (None, None))[:2]
    return a is not None and b is not None and len(a) == 2 and len(b) == 2 and b[1] == 1 and a[1] == b[0]


FAMILIES: dict[str, Callable[[TracedProgram], bool]] = {
    "argmax_dim": _reduction("argmax.default", keepdim=False),
    "argmin_dim": _reduction("argmin.default", keepdim=False),
    "sum_reduction": _reduction("sum.dim_IntList", keepdim=True),
    "mean_dim": _reduction("mean.dim", keepdim=False),
    "max_dim": _reduction("max.dim", keepdim=False, output="op0[0]"),
    "min_dim": _reduction("min.dim", keepdim=False, output="op0[0]"),
    "cumsum_dim": _scan("cumsum.default"),
    "cumprod_dim": _scan("cumprod.default"),
    "cumsum_reverse_dim": _reverse_cumsum,
    "softmax": _softmax,
    "l1norm_dim1": _l1norm_dim1,
    "l2norm_dim1": _l2norm_dim1,
    "matvec": _matvec,
}


def traced_families(code: str) -> tuple[str, ...]:
    """The template families the reference's traced program is an instance of."""
    program = trace_program(code)
    if program is None:
        return ()
    return tuple(family for family, matches in FAMILIES.items() if matches(program))
