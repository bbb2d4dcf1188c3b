"""A checked call's rules on every timed call too (runner side), outside the timed windows.

A candidate can tell a checked call from a timed one (its inputs' storage, the seed set before checked
calls, its call count, inputs it predicts), so whatever only checked calls enforce it can break while
timed: return its input (the ring copy makes the values right), a tensor subclass that computes when the
harness copies it (after the timed window), another dtype, no kernel at all, or PyTorch in strict mode.
`TimedGuard` holds each timed call to the rules a checked call's output meets (exactly torch.Tensor leaves
in plain lists and tuples, the reference's shapes and dtypes, no memory shared with the call's inputs),
requires as many kernel launches as every checked call made (of the calls judged right that launched any:
a call PyTorch answered alone, or the stale-replay call, lowers no floor; a training step's forward timed
alone, as many as their forwards made), holds a training step's forward
outputs to what they were as the forward returned (`forward_probe`), and in
strict mode traces the call's PyTorch ops as a checked call's are traced. What it finds goes to the judge
as a named check (`TimedViolation.as_reply`), which fails the candidate as the checked call would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kernelevolve.eval.forward_probe import FORWARD_DEFERRED, ForwardProbe
from kernelevolve.eval.launch_replay import STALE
from kernelevolve.eval.own_work import exact, storage_range, type_flags, type_name
from kernelevolve.eval.runner_trace import _LAUNCHES, OpTrace, left_behind_now
from kernelevolve.eval.tensor_guards import _is_tensor

if TYPE_CHECKING:
    import torch

# What a timed call's violation may be named: the judge accepts these names only
CHECKS = frozenset(
    {"output_type", "input_type", "shape", "dtype", "device", "aliasing", "no_kernel_ran", FORWARD_DEFERRED}
)


def lowered_floor(floor: int | None, launches: int, mode: str | None) -> int | None:
    """The fewest launches timed calls must make, after a checked call of `mode` launched `launches`: the
    fewest of the calls judged right that launched any. Not the call with launches left out, nor the
    stale-replay call, whose output need not be right, nor a call that launched none (PyTorch answered it
    alone): one such call, told by its generator seed, let timed calls launch nothing
    (`tests/adversarial/hacks/permissive_floor_lowered_by_stale_call.py`)."""
    if mode in ("off", STALE) or launches <= 0:
        return floor
    return launches if floor is None else min(floor, launches)


def lower_floor(floors: dict[int, int], index: int, launches: int, mode: str | None) -> None:
    """`floors[index]` lowered by a checked call of `mode` that launched `launches` (`lowered_floor`)."""
    if (floor := lowered_floor(floors.get(index), launches, mode)) is not None:
        floors[index] = floor


class TimedViolation(Exception):
    """A timed call broke a rule its checked calls met."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(detail)
        self.check = check
        self.detail = detail

    def as_reply(self) -> dict[str, Any]:
        return {"ok": False, "violation": {"check": self.check, "detail": self.detail[:2000]}}


class TimedGuard:
    """`before(call, leaves)` as a timed call's inputs are ready, `after(call, output)` right after it
    returns (its leaves, checked, are what the ring gets); `trace()` around the whole timing loop."""

    def __init__(
        self,
        slots: Sequence[torch.Tensor],
        launches_needed: int,
        strict: bool,
        probe: ForwardProbe | None = None,  # a training step's: its forward's outputs as it returned
    ) -> None:
        self.slots = list(slots)
        self.probe = probe
        self.launches_needed = launches_needed
        self.op_trace = OpTrace() if strict else None
        self._launches_at = 0
        self._inputs: list[tuple[int, int]] = []
        self._leaves: list[Any] = []

    @contextlib.contextmanager
    def trace(self) -> Iterator[None]:
        if self.op_trace is None:
            yield
            return
        self.op_trace.recording = False
        with self.op_trace:
            yield

    def before(self, leaves: Sequence[Any]) -> None:
        self._leaves = list(leaves)  # checked by `after`, before the runner reads them again
        self._inputs = [storage_range(t) for t in leaves if _is_tensor(t) and t.numel()]
        self._launches_at = _LAUNCHES[0]
        if self.op_trace is not None:
            self.op_trace.begin_call([t for t in leaves if _is_tensor(t)])

    def after(self, call: int, output: Any) -> list[torch.Tensor]:
        if self.op_trace is not None:
            self.op_trace.recording = False
        # The runner keeps each input's Python object for later calls and refreshes it in place, calling its
        # methods: one whose class (or whose storage's) the call swapped would run candidate code there
        # (`tests/adversarial/hacks/lazy_input_refresh_swapped_class.py`).
        if not all(exact(t) for t in self._leaves if _is_tensor(t)):
            raise TimedViolation(
                "input_type",
                f"timed call {call} changed the class of an input tensor or of its storage: inputs must be left "
                "as they were handed over",
            )
        if left_behind_now(0 if self.op_trace is None else 1):  # before its copy could run them
            raise RuntimeError("hooks left installed after a timed call (the reply names them)")
        launched = _LAUNCHES[0] - self._launches_at
        if launched < self.launches_needed:
            raise TimedViolation(
                "no_kernel_ran",
                f"timed call {call} launched {launched} Triton kernel(s) where every checked call launched at "
                f"least {self.launches_needed}: the kernels that were checked must be the ones timed",
            )
        leaves = _plain_leaves(output, call)
        if len(leaves) != len(self.slots):
            raise TimedViolation(
                "output_type",
                f"timed call {call} returned {len(leaves)} tensor(s) where the reference returns "
                f"{len(self.slots)}",
            )
        for index, (leaf, slot) in enumerate(zip(leaves, self.slots, strict=True)):
            _check_leaf(call, index, leaf, slot, self._inputs)
        deferred = None if self.probe is None else self.probe.changed()
        if deferred is not None:
            raise TimedViolation(FORWARD_DEFERRED, f"timed call {call}: {deferred}")
        return leaves

    def trace_fields(self) -> dict[str, Any]:
        """The strict trace of the timed calls, as a checked call's reply carries it."""
        return {} if self.op_trace is None else self.op_trace.fields()


def put_back_state(model: Any, names: Sequence[str | None], values: Sequence[Any]) -> None:
    """Before a timed call (after its inputs are refreshed): ModelNew's counterparts of the state the
    reference's calls move set back to `values`, found by name each time (a call may replace them: `self.hidden
    = ...`) through the modules' own dictionaries. A tensor (a parameter too) is copied into, and must still be
    exactly PyTorch's: `copy_` on one whose class a call swapped ran candidate code here, outside the timed
    window, with the next call's inputs ready (`tests/adversarial/hacks/lazy_state_copy_swapped_class.py`).
    A number or a plain container of tensors and numbers (`module_state.state`) is replaced in the module's
    own dictionary by a fresh copy in the candidate's own form (`in_form`: a count it keeps as an int for
    the reference's 0-d tensor, a tuple for its list), where the candidate's is still one of the same layout;
    a 0-d tensor standing for the reference's number is filled with it."""
    import torch

    from kernelevolve.eval.module_state import own_dict, owner_of

    for name, value in zip(names, values, strict=True):
        if name is None:
            continue
        held = held_state(
            model, name, value, "before a timed call: the runner puts that state back between calls"
        )
        if isinstance(held, torch.Tensor):
            with torch.no_grad():  # a parameter moved in place by a forward is moved back the same way
                if isinstance(value, torch.Tensor):
                    held.copy_(value.reshape(held.shape))  # a count may be 0-d on one side, (1,) on the other
                else:
                    held.fill_(value)
        else:
            module, leaf = owner_of(model, name)
            own_dict(module)[leaf] = in_form(value, held)


def in_form(value: Any, like: Any) -> Any:
    """A fresh copy of the reference's state `value` in the form of the candidate's counterpart `like`
    (`module_state.loose`): a 0-d tensor's number where `like` is a number, a tuple where it is a tuple."""
    import torch

    from kernelevolve.eval.module_state import SCALARS, copied

    if type(like) in SCALARS:
        return type(like)(value.item() if isinstance(value, torch.Tensor) else value)
    if isinstance(like, torch.Tensor):  # in the candidate's shape: a one-element tensor may be 0-d or not
        fresh = copied(value) if isinstance(value, torch.Tensor) else torch.tensor(value, dtype=like.dtype)
        return fresh.to(device=like.device).reshape(like.shape)
    if type(like) is dict:
        return {key: in_form(item, like[key]) for key, item in value.items()}
    if type(like) in (list, tuple):
        return type(like)(in_form(item, same) for item, same in zip(value, like, strict=True))
    return copied(value)


def held_state(model: Any, name: str, value: Any, when: str) -> Any:
    """ModelNew's state `name` now, read through the modules' own dictionaries, where it is still a plain
    value of `value`'s layout (a tensor exactly PyTorch's, of its shape); else a timed violation."""
    import torch

    from kernelevolve.eval.module_state import SCALARS, current, loose, plain_value, signature

    held = current(model, name)
    if isinstance(value, torch.Tensor) and not (value.dim() == 0 and type(held) in SCALARS):
        fits = exact(held, parameters=True) and (
            tuple(held.shape) == tuple(value.shape)  # or the same elements, shaped with other 1s (`loose`)
            or loose(signature(held)) == loose(signature(value))
        )
    else:  # a number, a container, or a 0-d tensor the candidate keeps as a number (`module_state.loose`)
        fits = plain_value(held, top=True) and loose(signature(held)) == loose(signature(value))
    if not fits:
        raise TimedViolation(
            "input_type",
            f"ModelNew's {name!r}, the state the reference's calls move, is no longer a plain value of its "
            f"layout ({signature(value)}) {when}",
        )
    return held


_PLAIN_VALUES = (type(None), bool, int, float, str)  # non-tensor leaves a timed output may hold
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: set on every class a Python statement defines


def builtin_tuple(cls: type) -> bool:
    """A tuple, or a tuple type defined in C (the named tuples of torch.return_types that torch.max, sort
    and topk return): its methods are the interpreter's, not code a candidate wrote."""
    return cls is tuple or (issubclass(cls, tuple) and not type_flags(cls) & _HEAPTYPE)


def plain_tuples(output: Any) -> Any:
    """The output with every tuple subclass (a `collections.namedtuple`, a `typing.NamedTuple`) turned into
    a plain tuple of the items it holds, read through tuple's own C iterator: no `__iter__`, `__len__` or
    `__getitem__` the candidate wrote runs, so the harness walks what the call returned, not what a method
    computes when walked. Applied the moment the call returns, inside the call (checked or timed), so the
    subclass instance is dropped there too. Plain lists are walked; anything else is left for the checks
    that follow (a list subclass, a dict, a tensor subclass fail as before)."""
    kind = type(output)
    if kind is not tuple and issubclass(kind, tuple):
        output = tuple(tuple.__iter__(output))
    if type(output) is tuple:
        return tuple(plain_tuples(item) for item in output)
    if type(output) is list:
        return [plain_tuples(item) for item in output]
    return output


def plain_output_call(fn: Any) -> Any:
    """`fn` whose result goes through `plain_tuples` before the caller sees it (the timing loop's call)."""

    def call(*args: Any) -> Any:
        return plain_tuples(fn(*args))

    return call


def _plain_leaves(output: Any, call: int) -> list[torch.Tensor]:
    """The output's tensors, requiring exactly torch.Tensor in exactly lists and tuples, beside plain values
    (no subclass whose methods run when the harness reads it). Told by `type()` alone: `isinstance` reads an
    object's `__class__`, which may be a property computing the output after the timed window
    (`tests/adversarial/hacks/lazy_output_via_class_property.py`)."""
    leaves: list[torch.Tensor] = []
    _collect_plain(output, call, leaves)
    return leaves


def _collect_plain(node: Any, call: int, leaves: list[torch.Tensor]) -> None:
    # module-level: a self-calling nested function is a reference cycle holding `leaves` (a timed call's
    # outputs), and a runner collects none outside candidate code (`own_work.pause_collector`)
    import torch

    kind = type(node)
    if kind is list or builtin_tuple(kind):
        for item in node:
            _collect_plain(item, call, leaves)
    elif kind is torch.Tensor and exact(node):  # its storage's class too: `data_ptr` may be code
        leaves.append(node)
    elif kind not in _PLAIN_VALUES:
        what = "tensor over another storage class" if kind is torch.Tensor else type_name(kind)
        raise TimedViolation(
            "output_type",
            f"timed call {call} returned a {what}: outputs must be exactly torch.Tensor "
            "(in plain lists or tuples), as the checked calls' were",
        )


def _check_leaf(
    call: int, index: int, leaf: torch.Tensor, slot: torch.Tensor, inputs: list[tuple[int, int]]
) -> None:
    where = f"timed call {call}, output {index}"
    if tuple(leaf.shape) != tuple(slot.shape):
        raise TimedViolation("shape", f"{where}: shape {tuple(leaf.shape)} != reference {tuple(slot.shape)}")
    if leaf.dtype != slot.dtype:
        raise TimedViolation("dtype", f"{where}: dtype {leaf.dtype} != reference {slot.dtype}")
    if leaf.device.type != slot.device.type:
        raise TimedViolation("device", f"{where}: on {leaf.device}, the reference output is on {slot.device}")
    if leaf.numel():
        start, end = storage_range(leaf)
        if any(start < in_end and in_start < end for in_start, in_end in inputs):
            raise TimedViolation(
                "aliasing", f"{where} shares memory with an input; return a new tensor, do not alias inputs"
            )
