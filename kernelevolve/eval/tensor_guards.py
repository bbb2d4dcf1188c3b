"""Tensors a check hands a candidate: copied with guard bands poisoned around them (an overrun shows), its
outputs' memory poisoned before the call (an output it never writes shows), and the trees of tensors
inside nested arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kernelevolve.specs.reference import map_tensors

if TYPE_CHECKING:
    import torch


# Guard bands are wide on GPUs (tile kernels overrun by whole rows) and small on the CPU, where the
# interpreter is the bottleneck and the bands are for tests of the plumbing.
GUARD_BYTES = {"cuda": 64 << 10, "cpu": 4 << 10}


POISON_BYTE = 0xFF  # as float32/float16/bfloat16/float64 every all-ones pattern is a NaN


_MIN_POISON_BYTES = {"cuda": 64 << 20, "cpu": 64 << 10}


def _guard_bytes(device: torch.device) -> int:
    return GUARD_BYTES.get(device.type, GUARD_BYTES["cuda"])


# By the object's type, never `isinstance`: that reads an object's `__class__` when its type does not
# match, and a candidate's output can make `__class__` a property running its code in the runner's own work
# (`tests/adversarial/hacks/lazy_output_via_class_property.py`)
def _is_tensor(value: Any) -> bool:
    import torch

    return issubclass(type(value), torch.Tensor)


def tensor_leaves(value: Any) -> list[torch.Tensor]:
    if _is_tensor(value):
        return [value]
    if issubclass(type(value), (list, tuple)):
        return [t for item in value for t in tensor_leaves(item)]
    if issubclass(type(value), dict):
        return [t for item in value.values() for t in tensor_leaves(item)]
    return []


_tensor_leaves = tensor_leaves


def tensor_bytes(value: Any) -> int:
    """Bytes held by the tensors in a (nested) output."""
    return sum(t.numel() * t.element_size() for t in _tensor_leaves(value))


def clone_tree(value: Any) -> Any:
    return map_tensors(lambda tensor: tensor.clone(), value)


def _layout(value: Any) -> Any:
    """Structure, tensor shapes/dtypes/devices and plain values: equal layouts can share storage."""
    if _is_tensor(value):
        return ("tensor", tuple(value.shape), value.dtype, value.device)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_layout(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _layout(v)) for k, v in value.items()))
    return ("value", repr(value))


def guard_inputs(inputs: list[Any], arena: Any = None) -> tuple[list[Any], list[Any]]:
    """Copies of the top-level tensor inputs placed between poison-filled guard bands.

    Returns the new inputs and, per tensor leaf, the backing byte buffer (None when the tensor
    is not contiguous and was merely cloned). With `arena` (`shared_tensors.SharedArena`) the copies
    live where a runner can map them.
    """
    guards: list[Any] = []
    placed = [_place(v, arena, guards) for v in inputs]
    return placed, guards


def _place(value: Any, arena: Any, guards: list[Any]) -> Any:
    """`guard_inputs` of one value. Module-level, as every recursive helper here: a nested function that
    calls itself is a reference cycle, which keeps what it closes over (`guards`: input-sized buffers)
    until a garbage collection (`tests/test_reference_cycles.py`)."""
    import torch

    if isinstance(value, torch.Tensor):
        if not value.is_contiguous() or value.numel() == 0:
            guards.append(None)
            return value.clone() if arena is None else arena.copy_of(value)
        nbytes = value.numel() * value.element_size()
        guard = _guard_bytes(value.device)
        size = 2 * guard + nbytes
        if arena is None:
            buffer = torch.full((size,), POISON_BYTE, dtype=torch.uint8, device=value.device)
        else:
            buffer = arena.empty_strided((size,), (1,), torch.uint8)
            buffer.fill_(POISON_BYTE)
        view = buffer[guard : guard + nbytes].view(value.dtype).view(value.shape)
        view.copy_(value)
        if arena is not None:
            arena.register_view(buffer, view)
        guards.append(buffer)
        return view
    if isinstance(value, (list, tuple)):
        return type(value)(_place(v, arena, guards) for v in value)
    if isinstance(value, dict):
        return {k: _place(v, arena, guards) for k, v in value.items()}
    return value


def _guards_intact(buffer: torch.Tensor) -> bool:
    import torch

    guard = _guard_bytes(buffer.device)
    bands = torch.cat([buffer[:guard], buffer[-guard:]])
    return bool((bands == POISON_BYTE).all())


_POISON_BUDGET_BYTES = 4 << 30


def poison_byte(asked: object) -> int:
    """The byte the judge asked the allocator's freed blocks be filled with (`remote._poison_byte`), or
    the default where the request names none that is a byte."""
    if not isinstance(asked, int) or isinstance(asked, bool) or not 0 <= asked <= 255:
        return POISON_BYTE
    return asked


def poison_allocator(like: Sequence[torch.Tensor], byte: int = POISON_BYTE) -> None:
    """Leave freed, NaN-filled blocks (`byte` in every byte) in the allocator's cache, sized like the
    expected outputs.

    The CUDA caching allocator hands a freed block of the right size to the next request, so an
    output the candidate allocates and then writes only in part keeps NaN where it did not write
    (rather than, say, the reference's result from a moment ago).
    """
    import torch

    if not like:
        return
    device = like[0].device
    floor = _MIN_POISON_BYTES.get(device.type, _MIN_POISON_BYTES["cuda"])
    total = sum(t.numel() * t.element_size() for t in like)
    sizes = [max(2 * total, floor)] + [t.numel() * t.element_size() for t in like for _ in range(2)]
    if sum(sizes) > _POISON_BUDGET_BYTES:  # multi-GB outputs: one block each, or the pool alone fills the GPU
        sizes = [t.numel() * t.element_size() for t in like]
    blocks = [torch.full((max(size, 1),), byte, dtype=torch.uint8, device=device) for size in sizes]
    del blocks


def synchronize_current_stream(tensors: list[torch.Tensor]) -> None:
    import torch

    device = next((t.device for t in tensors if t.device.type == "cuda"), None)
    if device is not None:
        torch.cuda.current_stream(device).synchronize()
