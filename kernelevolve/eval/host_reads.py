"""Tensor data read into Python or NumPy during a strict candidate's call (runner side).

On the CPU platform a candidate's input tensors already live in host memory, so NumPy or Python can do
the work with no device copy for the op trace to see: `.numpy()` (and `np.asarray`, which calls it),
`.tolist()`, DLPack exports (`np.from_dlpack`), `Tensor.apply_` / `map_` (a Python function per
element, no ATen op dispatched), storages' `.tolist()` and serialization (`torch.serialization.save`
into any object with a `write` method). The static checks reject such code only where
they can tell a value holds input data, and a value parked on an object or passed through a nested
function, lambda or match capture hides that. So the runner counts, per traced call, the elements read
this way (`.item()` is counted by the op trace, one per call); the judge fails a strict candidate that
reads more than a handful (`remote.strict_violation`). Wrapped before the candidate is imported; like
every runtime trace this is the runner's word, and the static checks stand in front of it.
"""

from __future__ import annotations

import contextlib
import math
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

_SINK: list[Callable[[int], None] | None] = [None]  # the recording trace's counter, or None
# Tensors whose memory Python can read with no tensor method running, by their storage's address: NumPy
# views of tensors (`.numpy()`, DLPack exports) and tensors made over NumPy arrays, buffers or another
# library's DLPack export (`torch.as_tensor(array)`). What an allowed copy writes into one (`copy_`) is a
# host read whenever the view was made, in `__init__` or at import too, so every op on such a tensor
# during a call counts it (`exposed_elements`). Weak: a view's memory lives as long as its tensor.
_EXPOSED: dict[int, weakref.ref[Any]] = {}
_HARNESS = threading.local()  # set while the harness maps the judge's shared memory (`harness_memory`)


@contextlib.contextmanager
def harness_memory() -> Iterator[None]:
    """Tensors made within the block over another object's memory are the harness's own, not recorded:
    the judge's inputs and output slots, which a runner maps from shared files (`shared_tensors`)."""
    before = getattr(_HARNESS, "active", False)
    _HARNESS.active = True
    try:
        yield
    finally:
        _HARNESS.active = before


def reading_into(sink: Callable[[int], None] | None) -> Callable[[int], None] | None:
    """Send host reads to `sink` from now on (None: count nothing); returns the previous sink."""
    previous = _SINK[0]
    _SINK[0] = sink
    return previous


def _count(elements: int) -> None:
    sink = _SINK[0]
    if sink is not None:
        sink(elements)


def _tensor_elements(value: Any, *args: Any, **kwargs: Any) -> int:
    return int(value.numel())


def _array_elements(array: Any, shape: Any = None, *args: Any, **kwargs: Any) -> int:
    """Elements of a strided NumPy view: its shape's product (the array's own size without one)."""
    shape = kwargs.get("shape", shape)
    if shape is None:
        return int(getattr(array, "size", 0))
    return math.prod(int(size) for size in shape)


def _exporting_elements(value: Any, *args: Any, **kwargs: Any) -> int:
    """A NumPy or DLPack view of `value`: its elements are read now, and whatever is written there later."""
    _expose(value)
    return int(value.numel())


def _expose(tensor: Any) -> None:
    """Host memory only: a device tensor's export names device memory, which Python reads only through
    another GPU library (banned statically) or a copy PyTorch dispatches."""
    ptr = tensor.untyped_storage().data_ptr()
    if ptr and tensor.device.type == "cpu":
        _EXPOSED[ptr] = weakref.ref(tensor)


def exposed_elements(values: Any) -> int:
    """Elements of the tensors among `values` (an op's arguments) whose memory Python can read."""
    import torch

    if not _EXPOSED:
        return 0
    count = 0
    for value in values if isinstance(values, (list, tuple)) else (values,):
        if isinstance(value, (list, tuple)):
            count += exposed_elements(value)
        elif isinstance(value, torch.Tensor) and value.device.type != "meta":
            view = _EXPOSED.get(value.untyped_storage().data_ptr())
            if view is not None and view() is not None:
                count += int(value.numel())
    return count


def _storage_elements(value: Any, *args: Any, **kwargs: Any) -> int:
    return int(value.nbytes())


def _record_bytes(
    writer: Any, name: Any = None, data: Any = None, size: Any = 0, *args: Any, **kwargs: Any
) -> int:
    """A zip record `torch.save` writes: a storage's bytes (its pickled metadata is text or bytes)."""
    return 0 if isinstance(data, (bytes, str)) else int(size)


def watch_host_reads() -> None:
    """Wrap the routes from tensor data to Python / NumPy values so each call counts what it reads."""
    import numpy.lib.stride_tricks
    import torch
    import torch.utils.dlpack

    routes: list[tuple[Any, str, Callable[..., int]]] = [
        (torch.Tensor, name, _tensor_elements) for name in ("tolist", "apply_", "map_", "map2_")
    ]
    routes += [(torch.Tensor, name, _exporting_elements) for name in ("numpy", "__dlpack__")]
    routes += [
        (torch, "to_dlpack", _exporting_elements),
        (torch.utils.dlpack, "to_dlpack", _exporting_elements),
    ]
    routes += [(torch.UntypedStorage, "tolist", _storage_elements)]
    # Serialization hands a storage's bytes to any object with a `write` method (`torch.serialization.save`
    # into a candidate's own class; a storage's `__reduce__`), and sharing one hands out a file of them.
    routes += [
        (torch.UntypedStorage, name, _storage_elements)
        for name in ("_write_file", "_share_fd_cpu_", "_share_filename_cpu_")
    ]
    routes += [(torch._C.PyTorchFileWriter, "write_record", _record_bytes)]
    # NumPy's view with unchecked strides reaches any address (a stride from its own array to a tensor's
    # `data_ptr()`): banned statically by name, counted here where the static checks are not run
    routes += [(numpy.lib.stride_tricks, "as_strided", _array_elements)]
    for owner, name, size in routes:
        original = getattr(owner, name, None)
        if original is not None and not getattr(original, "_kernelevolve_counted", False):
            setattr(owner, name, _counting(original, size))
    for owner, name in [(torch, n) for n in _OVER_HOST_MEMORY] + [(torch.utils.dlpack, "from_dlpack")]:
        original = getattr(owner, name, None)
        if original is not None and not getattr(original, "_kernelevolve_counted", False):
            setattr(owner, name, _exposing(original))


# Tensors made over memory another object holds: a NumPy array, a buffer, a DLPack export
_OVER_HOST_MEMORY = ("from_numpy", "frombuffer", "as_tensor", "asarray", "from_dlpack")


def _exposing(original: Callable[..., Any]) -> Callable[..., Any]:
    """`original`, recording a tensor it makes over another object's memory (`_EXPOSED`), counted whole if
    made during a call. Made from a tensor or from Python values, it is a tensor or a copy: not recorded."""
    import torch

    def made(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        source = args[0] if args else next(iter(kwargs.values()), None)
        plain = (torch.Tensor, list, tuple, int, float, bool, complex)
        if (
            isinstance(result, torch.Tensor)
            and not isinstance(source, plain)
            and not getattr(_HARNESS, "active", False)
        ):
            _expose(result)
            _count(int(result.numel()))
        return result

    made._kernelevolve_counted = True  # type: ignore[attr-defined]
    return made


def _counting(original: Callable[..., Any], size: Callable[..., int]) -> Callable[..., Any]:
    """`original`, counting what it reads. A closure, not a default argument: `__defaults__` /
    `__kwdefaults__` would hand a candidate the uncounted original (`__closure__` is banned statically)."""

    def counted(*args: Any, **kwargs: Any) -> Any:
        if args:
            _count(size(*args, **kwargs))
        return original(*args, **kwargs)

    counted._kernelevolve_counted = True  # type: ignore[attr-defined]
    return counted
