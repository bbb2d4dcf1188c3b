"""A call's arguments as a structure with tensor positions marked, and the arguments rebuilt from it.

The judge sends a timing's input sets as flat tensor leaves; the runner rebuilds each call's arguments, and
the judge rebuilds them again to check a timed call, from the same structure. One tensor in several
positions (`get_inputs()` returning `[x, x]`) is one leaf, every position naming it: the aliasing is part of
the input structure, so both sides refresh it once and hand the same tensor to each position. Made as two
leaves, the runner refreshed two copies with two patterns while the judge flipped one tensor twice, and an
honest kernel failed its timed checks (`tests/adversarial/good/same_input_twice_two_pointers.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def structure_of(arguments: Sequence[Any]) -> list[Any]:
    """Lists and tuples kept, a tensor marked `{"leaf": i}` (its index in `leaves_of`), anything else kept as
    its value."""
    seen: dict[Any, int] = {}
    return [_node(v, seen) for v in arguments]


def leaves_of(arguments: Sequence[Any]) -> list[Any]:
    """The distinct tensors of the arguments in the order `structure_of` first meets them: a tensor in two
    positions (the same object, or the same view of the same memory) is one leaf."""
    seen: dict[Any, int] = {}
    leaves: list[Any] = []
    for value in arguments:
        _collect(value, seen, leaves)
    return leaves


def rebuild_arguments(structure: Any, leaves: list[Any]) -> list[Any]:
    """Arguments from `structure_of`'s structure and the set's distinct tensor leaves (`leaves_of`)."""
    return [_fill(node, leaves) for node in structure]


def _key(tensor: Any) -> Any:
    """What makes two tensors one leaf: the same object, or an equal view (offset, shape, strides, dtype) of
    the same memory. Views that differ while sharing memory stay two leaves (an open gap: round13.md)."""
    if tensor.numel() == 0:
        return ("object", id(tensor))
    storage = tensor.untyped_storage().data_ptr()
    return (
        "view",
        storage,
        tensor.storage_offset(),
        tuple(tensor.shape),
        tensor.stride(),
        tensor.dtype,
        str(tensor.device),
    )


# Module-level recursion: a self-calling nested function is a reference cycle holding what it closes over,
# and a runner collects none outside candidate code (`tests/test_reference_cycles.py`).
def _node(value: Any, seen: dict[Any, int]) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return {"leaf": seen.setdefault(_key(value), len(seen))}
    if isinstance(value, (list, tuple)):
        return {
            "kind": "tuple" if isinstance(value, tuple) else "list",
            "items": [_node(v, seen) for v in value],
        }
    return {"value": value}


def _collect(value: Any, seen: dict[Any, int], leaves: list[Any]) -> None:
    import torch

    if isinstance(value, torch.Tensor):
        key = _key(value)
        if key not in seen:
            seen[key] = len(seen)
            leaves.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect(item, seen, leaves)


def _fill(node: Any, leaves: list[Any]) -> Any:
    if isinstance(node, dict) and "leaf" in node:
        return leaves[node["leaf"]]
    if isinstance(node, dict) and "items" in node:
        items = [_fill(item, leaves) for item in node["items"]]
        return tuple(items) if node["kind"] == "tuple" else items
    return node["value"]
