"""A checked call's output as the runner describes it to the judge and copies it into the judge's slots.

The judge rebuilds the output from the description (`remote.rebuild_output`) and reads the values from its
slots, so the description may only say what the runner read without running candidate code: containers and
tensors are told by `type()` (a list subclass's `__iter__`, a property `__class__`, a swapped storage's
`data_ptr` all run code), a container is a list or tuple only when it is exactly one (a subclass named
`list` described as "list" passed for one), and nothing of an object that is not exactly PyTorch's or
Python's own is read beyond its type's name. Run inside `own_work.quiet`.
"""

from __future__ import annotations

from typing import Any

from kernelevolve.eval.own_work import exact, storage_range, type_name
from kernelevolve.eval.timed_guard import builtin_tuple


def describe(value: Any, inputs: list[Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The output as JSON (containers, tensors: shape, dtype, device, plain torch.Tensor or not, the input
    it shares memory with; plain values) and, for each tensor leaf in order, the tensor to copy into its
    slot (None where it is not exactly a torch.Tensor). `inputs`: the call's input tensors, all `exact`."""
    ranges = [storage_range(t) for t in inputs]
    described: list[dict[str, Any]] = []
    tensors: list[Any] = []
    _visit(value, "output", ranges, described, tensors)
    return described, tensors


def _visit(
    node: Any, path: str, ranges: list[tuple[int, int]], described: list[dict[str, Any]], tensors: list[Any]
) -> None:
    # module-level: a self-calling nested function is a reference cycle holding `tensors` (the outputs),
    # and a runner collects none outside candidate code (`own_work.pause_collector`)
    import torch

    kind = type(node)
    if kind is list or builtin_tuple(kind):  # torch.return_types' named tuples travel as tuples
        described.append({"path": path, "kind": "tuple" if kind is not list else "list", "length": len(node)})
        for i, item in enumerate(node):
            _visit(item, f"{path}[{i}]", ranges, described, tensors)
        return
    if issubclass(kind, torch.Tensor):
        tensors.append(node if exact(node) else None)
        described.append(_tensor(node, path, ranges) if exact(node) else _not_plain(node, path))
        return
    if node is None or kind in (bool, int, float, str):
        described.append({"path": path, "kind": "value", "value": node})
        return
    described.append({"path": path, "kind": "object", "type": type_name(kind)[:80]})


def _tensor(node: Any, path: str, ranges: list[tuple[int, int]]) -> dict[str, Any]:
    start, end = storage_range(node)
    alias = next(
        (i for i, (s, e) in enumerate(ranges) if node.numel() and start < e and s < end and e > s),
        None,
    )
    return {
        "path": path,
        "kind": "tensor",
        "plain": True,
        "type": "Tensor",
        "shape": list(node.shape),
        "dtype": str(node.dtype).removeprefix("torch."),
        "device": node.device.type,
        "aliases_input": alias,
    }


def _not_plain(node: Any, path: str) -> dict[str, Any]:
    """A tensor subclass, or a tensor whose storage's class was swapped: only the names of the types."""
    import torch

    kind = type(node)
    name = type_name(kind)
    if kind is torch.Tensor:
        name = f"Tensor over a {type_name(type(node.untyped_storage()))}"
    return {"path": path, "kind": "tensor", "plain": False, "type": name[:80]}


def fill_slots(tensors: list[Any], slots: list[Any]) -> None:
    """Copy each plain output tensor (`describe`'s, one per tensor leaf) whose shape and dtype match its slot;
    the rest is in the description."""
    for tensor, slot in zip(tensors, slots, strict=False):
        if tensor is not None and tuple(slot.shape) == tuple(tensor.shape) and slot.dtype == tensor.dtype:
            slot.copy_(tensor)
