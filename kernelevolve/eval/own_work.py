"""The runner's own work between a candidate's calls, where none of the candidate's code may run (runner side).

Between calls the runner checks each output and copies it into the judge's slot, refreshes the next call's
inputs and records what a strict call dispatched. Candidate code that runs there runs outside the timed
window and below the strict trace, where it can compute the output its call returned empty. `left_behind`
finds hooks left installed; this module closes the routes that install nothing:

- The cyclic garbage collector runs a cycle's `__del__` at whichever allocation crosses its threshold, a
  point a candidate lines up by counting its own allocations (`tests/adversarial/hacks/
  lazy_output_via_gc_finalizer.py`: inside the timed guard, after its hook check, before the ring copy).
  `pause_collector` stops it for the runner's whole life; it collects only within candidate code
  (`collecting`), where a finalizer's work is the candidate's own.
- A tensor's or a storage's `__class__` can be assigned a subclass after it was made (PyTorch keeps one
  Python object per storage), so an exact `torch.Tensor` the runner reads may answer `data_ptr`, `numel` or
  `device` with candidate code (`lazy_output_via_storage_class.py`, `strict_trace_calls_swapped_class.py`).
  `exact` tells, by `type()` alone, whether a tensor and its storage are still PyTorch's own classes; the
  runner reads a tensor the candidate held only once `exact` says so.
- `quiet`: torch function handling and Python dispatch off in the runner's copies and refreshes, so no mode
  or `__torch_function__` sees them, whatever put it there.

Like every run-time check this is the runner's word: the static checks stand in front.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from typing import Any

_STATE = {"paused_from_on": False, "depth": 0}


def pause_collector() -> None:
    """Stop the cyclic collector from now on (idempotent); `collecting` lets it run within candidate code."""
    if gc.isenabled():
        _STATE["paused_from_on"] = True
        gc.disable()


@contextlib.contextmanager
def collecting() -> Iterator[None]:
    """Candidate code: the collector runs as it would, and is stopped again the moment that code returns
    (whatever the code did to it)."""
    if not _STATE["paused_from_on"]:
        yield
        return
    _STATE["depth"] += 1
    gc.enable()
    try:
        yield
    finally:
        _STATE["depth"] -= 1
        if not _STATE["depth"]:
            gc.disable()


def collecting_call(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` called with the collector running (the timed calls: a collection there is the candidate's time)."""

    def call(*args: Any) -> Any:
        with collecting():
            return fn(*args)

    return call


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The runner's copies and refreshes: no torch function handling (modes, `__torch_function__`) and no
    Python dispatch (modes, `__torch_dispatch__`), so ops on exact tensors run PyTorch's kernels alone."""
    import torch

    with torch._C.DisableTorchFunction(), torch._C._DisableTorchDispatch():
        yield


def _tensor_classes() -> tuple[type, ...]:
    """PyTorch's own tensor classes whose methods are PyTorch's (a parameter in an op's arguments)."""
    import torch

    return tuple(c for c in (torch.Tensor, torch.nn.Parameter, getattr(torch.nn, "Buffer", None)) if c)


def exact(value: Any, parameters: bool = False) -> bool:
    """Whether `value` is exactly a `torch.Tensor` (or, with `parameters`, a PyTorch parameter or buffer)
    over a storage that is exactly `torch.UntypedStorage`: told by `type()`, which runs no candidate code."""
    import torch

    kind = type(value)
    if not (kind is torch.Tensor or (parameters and kind in _tensor_classes())):
        return False
    try:
        storage = value.untyped_storage()  # PyTorch's own method on PyTorch's own class
    except (RuntimeError, NotImplementedError):  # no storage (sparse): no storage object to swap
        return True
    return type(storage) is torch.UntypedStorage


def storage_range(tensor: Any) -> tuple[int, int]:
    """The byte range of an exact tensor's storage (`exact` first: a swapped storage's methods are code)."""
    storage = tensor.untyped_storage()
    start = storage.data_ptr()
    return start, start + storage.nbytes()


def type_name(kind: type) -> str:
    """A class's name read by `type`'s own descriptor: a metaclass may make `__name__` a property (code)."""
    return str(vars(type)["__name__"].__get__(kind, type))


def type_flags(kind: type) -> int:
    """A class's `__flags__`, read as `type_name` reads its name."""
    return int(vars(type)["__flags__"].__get__(kind, type))


def tensors_in(value: Any) -> list[Any]:
    """The tensors in nested exact lists, tuples and dicts, by `type()`: a container the candidate put there
    of another class is not entered (its `__iter__` is code), a tensor of another class is returned (for
    `exact` to refuse)."""
    import torch

    kind = type(value)
    if issubclass(kind, torch.Tensor):
        return [value]
    if kind in (list, tuple):
        return [t for item in value for t in tensors_in(item)]
    if kind is dict:
        return [t for item in value.values() for t in tensors_in(item)]
    return []
