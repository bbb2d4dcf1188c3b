"""Strict mode's copies of outside data steered by a host read: a gather done by PyTorch (runner side).

Strict mode lets PyTorch view and copy (`strict_ops`), and on a spec whose work is data movement those are
the work: indices read on the host pick views of a table, and copies of those views assemble the output
(`tests/adversarial/hacks/strict_gather_by_pytorch_copies.py`). An index that never reaches the host cannot
steer a view, so such a call reads tensor data first (`host_reads`), then copies part of memory holding data
from outside the call, or copies all of it into part of a larger buffer at an offset the index picks
(`strict_embedding_by_steered_whole_copies.py`). Honest copies move whole tensors into whole tensors
(`.contiguous()`, `.clone()` of an input before an in-place kernel, `permute().contiguous()`), or move what
the call's kernels wrote. So in a call that has read tensor data on the host, a copy of outside data from
part of its memory, or into part of a storage, counts as compute.

Outside data is memory the call did not allocate (its inputs, the module's parameters and buffers, anything
kept between calls) and memory a copy or a kernel launch on it may have filled from it, however many lie
between (a table cloned whole and then sliced: `strict_jagged_by_strided_copies_of_a_clone.py`). Part of a
storage is a view that is not one whole input, nor the whole storage, each element once (a slice, a
`select`, `narrow`, `as_strided`, `set_` onto an offset, an `expand`, a 0-d element as `fill_`'s value,
a storage's slice copied as a storage).
Memory is told by its storage's address; a storage the call allocates is new memory, whatever lay at that
address before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kernelevolve.eval import own_work, strict_ops

# Ops that move a tensor argument's data into other memory (`fill_` with a tensor value moves one element)
_COPIES = frozenset(
    {"clone", "copy_", "_to_copy", "to", "contiguous", "_reshape_copy", "lift_fresh_copy", "fill_"}
    | {"pin_memory", "_pin_memory"}  # a copy into page-locked host memory carries the data too
)
_IN_PLACE = frozenset({"copy_", "fill_"})  # the source is the second argument, the destination the first


class CallMemory:
    """What a call's PyTorch copies moved where, told by storage: one per call (`begin`)."""

    def __init__(self) -> None:
        self._inputs: set[tuple[int, int]] = set()
        self._made: dict[int, bool] = {}  # storages the call allocated -> whether they hold outside data

    def begin(self, inputs: Iterable[Any]) -> None:
        """A new call on these input tensors (exact tensors: the caller checked their classes)."""
        self._inputs = {_span(t) for t in inputs if own_work.exact(t) and t.numel()}
        self._made = {}

    def steered(self, func: Any, args: Any, kwargs: dict[str, Any], result: Any, read: bool) -> bool:
        """Follow one allowed op that ran; whether it copied outside data from or into part of a storage
        after the call `read` tensor data on the host. Only exact tensors are read (the caller counts any other as compute)."""
        import torch

        name = strict_ops.op_name(func)
        tags = set(getattr(func, "tags", ()))
        arguments = own_work.tensors_in([args, kwargs])
        results = own_work.tensors_in(result)
        if not all(own_work.exact(t, parameters=True) for t in arguments + results):
            return False
        known = {_storage(t) for t in arguments}
        if not (name in _COPIES or torch.Tag.view_copy in tags):
            for tensor in results:  # a factory's output, or an in-place op's own argument (left as it was)
                if _storage(tensor) not in known:
                    self._made[_storage(tensor)] = False
            return False
        positional = list(args) if isinstance(args, (list, tuple)) else []
        index = 1 if name in _IN_PLACE else 0
        source = positional[index] if len(positional) > index else None
        if not isinstance(source, torch.Tensor):
            return False  # a fill with a number: nothing moved
        outside = self._made.get(_storage(source), True)
        steered = not self._whole(source)
        if name in _IN_PLACE:
            target = positional[0]
            if outside:
                self._made[_storage(target)] = True
            if _layout(target) == _layout(source):
                return False  # memory copied onto itself: the Triton interpreter's copy-back on the CPU
            steered = steered or not self._whole(target)  # the index picks where a whole table lands
            kept = (
                name == "copy_"
                and source.shape == target.shape
                and self._prefix(source)
                and self._prefix(target)
            )
        else:
            for tensor in results:
                if _storage(tensor) not in known:
                    self._made[_storage(tensor)] = outside
            kept = self._prefix(source) and all(t.is_contiguous() for t in results)
        return outside and read and steered and not kept

    def joined(self, args: Any, result: Any) -> None:
        """Pieces joined into a new tensor (autograd's backward of a split): it holds outside data where a
        piece did, so a later copy of part of it is followed like a copy of the pieces."""
        pieces = [t for t in own_work.tensors_in(args) if own_work.exact(t, parameters=True)]
        outside = any(self._made.get(_storage(t), True) for t in pieces) or len(pieces) < len(
            own_work.tensors_in(args)
        )
        for tensor in own_work.tensors_in(result):
            self._made[_storage(tensor)] = outside

    def launched(self, tensors: list[Any]) -> None:
        """A Triton launch on these tensors: one that reads outside data may write it into any of them, so
        memory a kernel copied a table into holds outside data too (`strict_gather_from_kernel_copy.py`)."""
        exact = [t for t in tensors if own_work.exact(t, parameters=True)]
        if len(exact) < len(tensors) or any(self._made.get(_storage(t), True) for t in exact):
            for tensor in exact:
                self._made[_storage(tensor)] = True

    def _prefix(self, tensor: Any) -> bool:
        """A row-major run from the first byte of an input or of a whole storage (`x[:n]`, `buf[:rows]`): a
        copy between two keeps every element at its index, so a host read picks how much moves, never where
        to or from (`tests/adversarial/good/jagged_mean_pow2_rows_buffer_prefix_clone.py`)."""
        if not tensor.is_contiguous():
            return False  # a transposed or strided run reorders or skips elements
        start, end = _span(tensor)
        if any(first == start and end <= last for first, last in self._inputs):
            return True
        storage = tensor.untyped_storage()
        return start == storage.data_ptr() and storage.resizable()

    def _whole(self, tensor: Any) -> bool:
        if tensor.numel() == 0:
            return True
        if not _dense(tensor):
            return False  # an expand repeats elements; a strided slice skips some
        span = _span(tensor)
        if span in self._inputs:
            return True
        storage = tensor.untyped_storage()
        # a slice of a storage (`untyped_storage()[a:b]`) is a storage of its own, and the only kind that
        # cannot be resized: its whole is part of the memory it was cut from
        whole = span == (storage.data_ptr(), storage.data_ptr() + storage.nbytes())
        return whole and storage.resizable()


def _storage(tensor: Any) -> int:
    return int(tensor.untyped_storage().data_ptr())


def _dense(tensor: Any) -> bool:
    """Each element of a gap-free block once, in any order of dimensions (a permuted whole tensor is)."""
    step = 1
    for stride, size in sorted((t, s) for s, t in zip(tensor.shape, tensor.stride(), strict=True) if s != 1):
        if stride != step:
            return False
        step *= size
    return True


def _layout(tensor: Any) -> tuple[Any, ...]:
    return int(tensor.data_ptr()), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype


def _span(tensor: Any) -> tuple[int, int]:
    """The bytes a dense tensor covers (its first element lies lowest where no stride is negative)."""
    start = int(tensor.data_ptr())
    return start, start + tensor.numel() * tensor.element_size()
