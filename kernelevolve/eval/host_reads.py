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

from collections.abc import Callable
from typing import Any

_SINK: list[Callable[[int], None] | None] = [None]  # the recording trace's counter, or None


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


def _storage_elements(value: Any, *args: Any, **kwargs: Any) -> int:
    return int(value.nbytes())


def _record_bytes(
    writer: Any, name: Any = None, data: Any = None, size: Any = 0, *args: Any, **kwargs: Any
) -> int:
    """A zip record `torch.save` writes: a storage's bytes (its pickled metadata is text or bytes)."""
    return 0 if isinstance(data, (bytes, str)) else int(size)


def watch_host_reads() -> None:
    """Wrap the routes from tensor data to Python / NumPy values so each call counts what it reads."""
    import torch
    import torch.utils.dlpack

    routes: list[tuple[Any, str, Callable[..., int]]] = [
        (torch.Tensor, name, _tensor_elements)
        for name in ("numpy", "tolist", "__dlpack__", "apply_", "map_", "map2_")
    ]
    routes += [(torch, "to_dlpack", _tensor_elements), (torch.utils.dlpack, "to_dlpack", _tensor_elements)]
    routes += [(torch.UntypedStorage, "tolist", _storage_elements)]
    # Serialization hands a storage's bytes to any object with a `write` method (`torch.serialization.save`
    # into a candidate's own class; a storage's `__reduce__`), and sharing one hands out a file of them.
    routes += [
        (torch.UntypedStorage, name, _storage_elements)
        for name in ("_write_file", "_share_fd_cpu_", "_share_filename_cpu_")
    ]
    routes += [(torch._C.PyTorchFileWriter, "write_record", _record_bytes)]
    for owner, name, size in routes:
        original = getattr(owner, name, None)
        if original is not None and not getattr(original, "_kernelevolve_counted", False):
            setattr(owner, name, _counting(original, size))


def _counting(original: Callable[..., Any], size: Callable[..., int]) -> Callable[..., Any]:
    """`original`, counting what it reads. A closure, not a default argument: `__defaults__` /
    `__kwdefaults__` would hand a candidate the uncounted original (`__closure__` is banned statically)."""

    def counted(*args: Any, **kwargs: Any) -> Any:
        if args:
            _count(size(*args))
        return original(*args, **kwargs)

    counted._kernelevolve_counted = True  # type: ignore[attr-defined]
    return counted
