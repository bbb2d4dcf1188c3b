"""A call's arguments as a structure with tensor positions marked, and the arguments rebuilt from it.

The judge sends a timing's input sets as flat tensor leaves; the runner rebuilds each call's arguments, and
the judge rebuilds them again to check a timed call, from the same structure.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any


def structure_of(arguments: Sequence[Any]) -> list[Any]:
    """Lists and tuples kept, tensors marked `{"leaf": True}`, anything else kept as its value."""
    return [_node(v) for v in arguments]


def rebuild_arguments(structure: Any, leaves: list[Any]) -> list[Any]:
    """Arguments from `structure_of`'s structure and the set's tensor leaves in order."""
    position = iter(leaves)
    return [_fill(node, position) for node in structure]


# Module-level recursion: a self-calling nested function is a reference cycle holding what it closes over,
# and a runner collects none outside candidate code (`tests/test_reference_cycles.py`).
def _node(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return {"leaf": True}
    if isinstance(value, (list, tuple)):
        return {"kind": "tuple" if isinstance(value, tuple) else "list", "items": [_node(v) for v in value]}
    return {"value": value}


def _fill(node: Any, position: Iterator[Any]) -> Any:
    if isinstance(node, dict) and node.get("leaf"):
        return next(position)
    if isinstance(node, dict) and "items" in node:
        items = [_fill(item, position) for item in node["items"]]
        return tuple(items) if node["kind"] == "tuple" else items
    return node["value"]
