"""Runner side of the stale-replay call (`kernel_share`): what each Triton launch of a recorded call
changed, and the same changes written again over a later call's launches.

Leaving the launches out (`kernel_share`) shows the output needs the kernels, not that they compute
anything from the inputs: a token kernel setting a flag the output is multiplied by is needed, and writes
the same bytes on every call (`tests/adversarial/hacks/permissive_flag_dependent_output.py`). So a
correctness trial of a shape (the third from the end, `kernel_share.Plan`) is recorded: per launch, the elements of each tensor argument it changed
(compared bitwise) and their values after it. In a later "stale" call every launch runs for real; then,
unless some recorded launch of the same kernel and argument layout made exactly the same changes (work
that does not depend on the inputs, in whatever order a call launches it:
`permissive_flags_order_by_input.py`), the elements the recorded launch of the same rank changed are
overwritten with its values. Where the kernels' changes do not depend on the inputs, stale and fresh
agree and the output is still right: the judge fails it.

Running each launch before overwriting keeps the check fail-closed where the record cannot say what a
launch wrote: an element written with the value already there (`permissive_flag_prefilled_by_input.py`),
a launch past the record or with other tensor arguments, values past the record's size cap, memory reached
by address rather than as an argument all keep this call's own values, which only makes the output more
likely right. A CUDA graph replay hides what it writes: a recorded call that replayed one makes the check
inconclusive (`opaque`), since an honest graph-replaying candidate would otherwise fail. "decoy" calls (the
trials after the record) do the same work without writing back, so the stale call is one of several alike
(the judge hides which).
All of it is the runner's word, like every run-time check; the static checks stand in front.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kernelevolve.eval.own_work import exact, quiet

RECORD, STALE, DECOY = "record", "stale", "decoy"
# The backends whose launches the runner counts and can leave out, and what one launch is: recorded and
# replayed (the stale and decoy calls) for Triton alone (`runner_trace._count_cute_programs`)
COUNTED_LAUNCHES = {"triton": "Triton kernel launch", "cute": "CuTe DSL program run"}
_CAP_BYTES = 2 * 2**30  # recorded values kept per call; launches past it are not recorded (fail-closed)
# an argument larger than this is compared on a strided sample of its elements: a multi-GiB output
# recorded whole would pass the cap (and the honest kernel fail), and its copies would crowd the device
_WINDOW_BYTES = 64 * 2**20
_INT_VIEWS = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}
Changes = dict[Any, tuple[Any, Any]]  # argument key -> (elements changed, the argument's values after)


class _State:
    mode: str | None = None
    launches: list[tuple[Any, Changes]] = []  # per recorded launch: its signature, its changes
    seen: dict[Any, int] = {}  # launches of each signature so far in this call
    stored = 0
    opaque = False


def set_mode(mode: str | None) -> None:
    """The mode of the call about to run; a new record forgets the last one, None keeps it."""
    _State.mode = mode if mode in (RECORD, STALE, DECOY) else None
    _State.seen = {}
    if mode == RECORD:
        _State.launches, _State.stored, _State.opaque = [], 0, False


def forget() -> None:
    _State.mode, _State.launches, _State.stored, _State.seen = None, [], 0, {}


def active() -> bool:
    return _State.mode is not None


def fields() -> dict[str, Any]:
    """What a stale or decoy call's reply says of the record: inconclusive (a graph replay) or not."""
    return {"replay_opaque": _State.opaque} if _State.mode in (STALE, DECOY) else {}


def graph_replayed() -> None:
    if _State.mode == RECORD:
        _State.opaque = True


def around(run: Callable[..., Any], kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """One launch in a recorded, stale or decoy call."""
    import torch

    if _capturing(torch):
        # captured into a CUDA graph (a graph-replaying candidate captures during its second checked
        # call): nothing runs until the replay, whose writes are hidden, and reading the changes back
        # would invalidate the capture. The record is inconclusive, as for any replay.
        graph_replayed()
        return run(kernel, *args, **kwargs)
    tensors = dict(_tensor_args(args, kwargs))
    # a launch's identity across calls: its kernel and its tensor arguments' layout (never scalar
    # arguments, which an honest kernel may derive from the data: `scale = x.abs().max().item()`)
    signature = (
        str(getattr(getattr(kernel, "fn", kernel), "__qualname__", "")),
        tuple((k, tuple(t.shape), str(t.dtype), str(t.device)) for k, t in tensors.items()),
    )
    with quiet():  # the runner's own ops, not the candidate's (strict trace), seen by no mode
        windows = {key: window for key, t in tensors.items() if (window := _window(t)) is not None}
        before = {key: window.clone() for key, window in windows.items()}
    result = run(kernel, *args, **kwargs)
    with quiet():
        changes = _changes(windows, before, keep=_State.mode == RECORD)
        if _State.mode == RECORD:
            _State.launches.append((signature, changes))
        else:
            _replay(signature, changes, windows)
    return result


def _capturing(torch: Any) -> bool:
    return bool(torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing())


def _replay(signature: Any, changes: Changes, windows: dict[Any, Any]) -> None:
    """After a launch of a stale (or decoy) call: unless a recorded launch of the same signature made
    exactly these changes (input-independent work, in whatever order the calls launch it), write over
    them what the recorded launch of the same rank among its signature's changed."""
    recorded = [changes_a for sig, changes_a in _State.launches if sig == signature]
    rank = _State.seen[signature] = _State.seen.get(signature, 0) + 1
    if rank > len(recorded) or any(_same(changes, other) for other in recorded):
        return
    for key, (mask, post) in recorded[rank - 1].items():
        _overwrite(windows.get(key), mask, post, write=_State.mode == STALE)


def _same(changes: Changes, other: Changes) -> bool:
    import torch

    return changes.keys() == other.keys() and all(
        torch.equal(mask, other[key][0]) and torch.equal(post[mask], other[key][1][mask])
        for key, (mask, post) in changes.items()
    )


def _changes(windows: dict[Any, Any], before: dict[Any, Any], keep: bool) -> Changes:
    changed = {}
    for key, old in before.items():
        after = windows[key]
        mask = after != old
        size = mask.numel() * (1 + after.element_size())
        if not bool(mask.any()) or (keep and _State.stored + size > _CAP_BYTES):
            continue
        changed[key] = (mask, after.clone())
        _State.stored += size if keep else 0
    return changed


def _overwrite(view: Any, mask: Any, post: Any, write: bool) -> None:
    if view is None or view.shape != post.shape or view.dtype != post.dtype or view.device != post.device:
        return  # another argument than the record's: this call's own values stay
    try:
        (view if write else view.clone())[mask] = post[mask]
    except RuntimeError:
        return  # overlapping memory (an expanded view) cannot be written elementwise: its own values stay


def _window(tensor: Any) -> Any:
    """The elements of an argument the record compares (a view: writes reach the argument): all of them,
    or past `_WINDOW_BYTES` every k-th along its longest dimension, the same k for the same shape. A
    kernel's input-independent writes outside the sample leave the stale call right (fail-closed); an honest
    kernel's writes inside it, overwritten with another call's values, make it wrong."""
    view = _int_view(tensor)
    if view is None or view.dim() == 0 or view.numel() * view.element_size() <= _WINDOW_BYTES:
        return view
    step = -(-view.numel() * view.element_size() // _WINDOW_BYTES)
    longest = max(range(view.dim()), key=view.size)
    index: list[Any] = [slice(None)] * view.dim()
    index[longest] = slice(None, None, step)
    return view[tuple(index)]


def _int_view(tensor: Any) -> Any:
    """The tensor's elements as integers of the same width: bitwise comparison (NaN equals itself)."""
    import torch

    kind = _INT_VIEWS.get(tensor.element_size())
    if kind is None or tensor.is_complex() or tensor.device.type == "meta":
        return None
    try:
        return tensor.detach().view(getattr(torch, kind))
    except RuntimeError:
        return None


def _tensor_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[tuple[Any, Any]]:
    """A launch's tensor arguments by position or name, inside tuples and lists, and a tensor
    descriptor's base tensor (`TensorDescriptor.base`). Told by `type()` and read only where exactly
    PyTorch's or Triton's own (`own_work.exact`): this runs with Python dispatch off, where a property
    `__class__`, a list subclass's `__iter__` or a swapped class's method would run candidate code
    unseen by the strict trace. A tensor of another class is left out of the record and the replay, so
    its writes keep this call's values (fail-closed: a stale output more likely right)."""
    descriptors = _descriptor_types()
    for i, value in enumerate(args):
        yield from _visit_argument(i, value, descriptors)
    for name in sorted(k for k in kwargs if k not in ("grid", "warmup")):
        yield from _visit_argument(name, kwargs[name], descriptors)


def _visit_argument(key: Any, value: Any, descriptors: tuple[type, ...]) -> Iterator[tuple[Any, Any]]:
    # module-level: a self-calling nested function is a reference cycle made at every launch, and a runner
    # collects none outside candidate code (`own_work.pause_collector`)
    import torch

    kind = type(value)
    if issubclass(kind, torch.Tensor):
        if exact(value, parameters=True):
            yield key, value
    elif kind is tuple or kind is list:
        for i, item in enumerate(value):
            yield from _visit_argument((key, i), item, descriptors)
    elif kind in descriptors and exact(value.base, parameters=True):
        yield (key, "base"), value.base


def _descriptor_types() -> tuple[type, ...]:
    """Triton's tensor descriptor classes (a TMA launch's argument holding its tensor as `base`)."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return ()
    return (TensorDescriptor,)
