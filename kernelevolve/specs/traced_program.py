"""A reference's traced program: what its forward does, recorded on meta tensors.

The reference is built as its problem builds it (`Model(*get_init_inputs())`) and called once on meta
tensors while a dispatch mode records every ATen op with its arguments (schema defaults filled in) and a
function mode the torch-level calls that dispatch would decompose (scaled dot-product attention). The
families and tags (`traced_families`, `traced_layers`, `traced_tags`) are matched on this record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelevolve.specs.reference_module import load_reference_module
from kernelevolve.specs.tracing import TRACING_LOCK


@dataclass(frozen=True)
class TracedOp:
    """One ATen op: its name ("argmax.default"), where each tensor argument came from ("in0" a forward
    input, "op2" the third op's output, "const" anything else), and its other arguments by name."""

    name: str
    sources: tuple[str, ...]
    arguments: dict[str, Any]
    shapes: tuple[tuple[int, ...] | None, ...] = ()  # its outputs' shapes (None: not a tensor)


@dataclass(frozen=True)
class TracedProgram:
    ops: tuple[TracedOp, ...]
    init: tuple[Any, ...]  # the constructor's arguments
    input_shapes: tuple[tuple[int, ...] | None, ...]  # None: not a tensor
    output: str  # where the forward's result came from ("op3", or "op3[0]" for an op's first output)
    # torch-level calls (what reaches the dispatcher decomposed, such as attention on meta tensors), with
    # "fn2" naming the third call's result; grad-mode switches left out
    functions: tuple[TracedOp, ...] = ()
    function_output: str = ""
    # the model's state_dict as (name, shape) in its order; a parameter or buffer an op reads is its source
    # "state:<name>"
    state: tuple[tuple[str, tuple[int, ...]], ...] = ()


def trace_program(code: str, params: Mapping[str, Any] | None = None) -> TracedProgram | None:
    """The reference's traced program (at these size constants), or None where it cannot be built or run
    on meta tensors."""
    import torch

    try:
        module = load_reference_module(code, params)
        init = tuple(module.get_init_inputs())
        with TRACING_LOCK, torch.device("meta"):
            model = module.Model(*init)
            inputs = list(module.get_inputs())
            state = {f"state:{name}": value for name, value in model.state_dict(keep_vars=True).items()}
            recorder, calls = _Recorder(inputs, state), _Calls(inputs, state)
            with torch.no_grad(), calls, recorder:
                result = model(*inputs)
    except Exception:  # noqa: BLE001 - a reference meta tensors cannot run gets no traced family
        return None
    output = recorder.source(result) if isinstance(result, torch.Tensor) else "other"
    called = calls.source(result) if isinstance(result, torch.Tensor) else "other"
    shapes = tuple(tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in inputs)
    held = tuple((name.removeprefix("state:"), tuple(value.shape)) for name, value in state.items())
    return TracedProgram(tuple(recorder.ops), init, shapes, output, tuple(calls.calls), called, held)


def _calls_base() -> type:
    from torch.overrides import TorchFunctionMode

    return TorchFunctionMode


class _Calls(_calls_base()):  # type: ignore[misc]
    """Torch-level calls, as the forward makes them (before any decomposition)."""

    def __init__(self, inputs: Sequence[Any], state: Mapping[str, Any]) -> None:
        super().__init__()
        self.calls: list[TracedOp] = []
        self._sources = _named(inputs, state)
        self._keep = [*inputs, *state.values()]

    def source(self, value: Any) -> str:
        return self._sources.get(id(value), "const")

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        import torch

        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        name = getattr(func, "__name__", str(func))
        if name == "_set_grad_enabled":
            return result
        sources = tuple(self.source(v) for v in _tensors(list(args) + list(kwargs.values())))
        others = {f"arg{i}": _plain(v) for i, v in enumerate(args) if not _is_tensors(v)}
        others.update({k: _plain(v) for k, v in kwargs.items() if not _is_tensors(v)})
        self.calls.append(TracedOp(name, sources, others))
        if isinstance(result, torch.Tensor):
            self._sources[id(result)] = f"fn{len(self.calls) - 1}"
            self._keep.append(result)
        return result


def _recorder_base() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


class _Recorder(_recorder_base()):  # type: ignore[misc]
    def __init__(self, inputs: Sequence[Any], state: Mapping[str, Any]) -> None:
        super().__init__()
        self.ops: list[TracedOp] = []
        self._sources = _named(inputs, state)
        self._keep = [*inputs, *state.values()]  # ids stay valid while the tensors live
        self._meta = _MetaMemo()

    def source(self, value: Any) -> str:
        return self._sources.get(id(value), "const")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        import torch

        kwargs = kwargs or {}
        named = _named_arguments(func, args, kwargs)
        sources = tuple(self.source(v) for v in _tensors(list(args) + list(kwargs.values())))
        others = {k: _plain(v) for k, v in named.items() if not _is_tensors(v)}
        for key, value in named.items():  # where a list of optional tensors has gaps (x[:, rows, cols])
            if isinstance(value, (list, tuple)) and any(v is None for v in value) and _is_tensors(value):
                others[key] = [None if v is None else self.source(v) for v in value]
        result = self._meta.call(func, args, kwargs)
        index = len(self.ops)
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        shapes = tuple(tuple(out.shape) if isinstance(out, torch.Tensor) else None for out in outputs)
        self.ops.append(TracedOp(str(func).removeprefix("aten."), sources, others, shapes))
        for k, out in enumerate(outputs):
            if isinstance(out, torch.Tensor):
                self._sources[id(out)] = f"op{index}" if len(outputs) == 1 else f"op{index}[{k}]"
                self._keep.append(out)
        return result


class _MetaMemo:
    """An op's meta result from an earlier call with the same argument metadata, where that result is
    fixed by it: a recurrent network's forward repeats one step's ops at every time step (hundreds of
    thousands of ops for KernelBench's LSTMs and GRUs), and PyTorch computes many meta results in Python.
    Two kinds are kept: ops that alias nothing (fresh meta tensors of the shapes, strides and dtypes they
    returned) and in-place ops that left their tensor's shape and strides as they were (the tensor itself
    again). Every other op (views, ops on tensors not on the meta device) is called each time."""

    def __init__(self) -> None:
        self._kept: dict[tuple[Any, ...], tuple[str, tuple[tuple[Any, ...], ...]]] = {}

    def call(self, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        import torch

        key = _metadata_key(func, args, kwargs)
        kept = None if key is None else self._kept.get(key)
        if kept is not None:
            kind, outputs = kept
            if kind == "in_place":
                return args[0]
            fresh = [
                torch.empty_strided(size, stride, dtype=dtype, device="meta")
                for size, stride, dtype in outputs
            ]
            return fresh[0] if kind == "tensor" else tuple(fresh)
        before = _layout(args[0]) if args and isinstance(args[0], torch.Tensor) else None
        result = func(*args, **kwargs)
        if key is not None:
            remembered = _remembered(func, args, result, before)
            if remembered is not None:
                self._kept[key] = remembered
        return result


def _layout(value: Any) -> tuple[Any, ...]:
    return (tuple(value.shape), value.stride(), value.storage_offset(), value.dtype, str(value.device))


def _metadata_key(func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The op and its arguments' metadata (tensors by layout, the rest by value); None where an argument is
    a tensor off the meta device, a list holding tensors, or a value of another kind."""
    names = tuple(sorted(kwargs))
    parts: list[Any] = [func, names]
    for value in (*args, *(kwargs[name] for name in names)):
        part = _metadata(value)
        if part is None:
            return None
        parts.append(part)
    return tuple(parts)


def _metadata(value: Any) -> tuple[Any, ...] | None:
    import torch

    if isinstance(value, torch.Tensor):
        if type(value) is not torch.Tensor or value.device.type != "meta":
            return None
        return _layout(value)
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype, torch.device, torch.layout)):
        return (type(value), value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float)) for v in value):
        return (type(value), tuple((type(v), v) for v in value))
    return None


def _remembered(
    func: Any, args: Sequence[Any], result: Any, before: tuple[Any, ...] | None
) -> tuple[str, tuple[tuple[Any, ...], ...]] | None:
    import torch

    schema = func._schema
    aliased = [a.alias_info for a in (*schema.arguments, *schema.returns) if a.alias_info is not None]
    if not aliased:
        outputs = result if isinstance(result, tuple) else (result,)
        if not outputs or not all(type(out) is torch.Tensor and out.device.type == "meta" for out in outputs):
            return None
        layouts = tuple((tuple(out.shape), out.stride(), out.dtype) for out in outputs)
        if any(out.storage_offset() != 0 for out in outputs):
            return None
        return ("tuple" if isinstance(result, tuple) else "tensor", layouts)
    first = schema.arguments[0] if schema.arguments else None
    in_place = (
        len(schema.returns) == 1
        and first is not None
        and first.alias_info is not None
        and first.alias_info.is_write
        and schema.returns[0].alias_info is not None
        and schema.returns[0].alias_info.before_set == first.alias_info.before_set
        and len(aliased) == 2
    )
    if in_place and before is not None and result is args[0] and _layout(result) == before:
        return ("in_place", ())
    return None


def _named(inputs: Sequence[Any], state: Mapping[str, Any]) -> dict[int, str]:
    """Source names of the forward's inputs ("in0") and the model's state ("state:weight") by identity."""
    named = {id(value): name for name, value in state.items()}
    named.update({id(x): f"in{i}" for i, x in enumerate(inputs)})
    return named


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
