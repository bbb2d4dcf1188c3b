"""State a module changes when called (BatchNorm's running statistics in training mode), which a drop-in
kernel must change the same way.

The judge snapshots the reference's floating buffers around each of its calls; the buffers that changed
are the state a candidate must leave behind too. The runner reads the candidate's counterparts by name,
else by the name's last part, else the next unmatched floating buffer of the same shape, in order (a
ModelNew that names its buffers its own way), and copies them into judge slots; the judge compares them
at the spec's tolerance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def snapshot(model: Any) -> dict[str, Any]:
    """Copies of the model's floating buffers (parameters are weights, not state a call changes)."""
    return {name: buffer.detach().clone() for name, buffer in floating_buffers(model).items()}


def changed(model: Any, before: Mapping[str, Any]) -> list[str]:
    """The buffers whose values differ from `before` (bit for bit, NaN payloads aside)."""
    import torch

    now = floating_buffers(model)
    return [
        name
        for name, old in before.items()
        if name in now and not torch.equal(now[name].detach().nan_to_num(), old.nan_to_num())
    ]


def floating_buffers(model: Any) -> dict[str, Any]:
    """The floating buffers of an nn.Module (none for any other callable)."""
    if not hasattr(model, "named_buffers"):
        return {}
    return {
        name: buffer
        for name, buffer in model.named_buffers()
        if buffer is not None and buffer.is_floating_point() and buffer.numel()
    }


def counterparts(model: Any, wanted: list[tuple[str, tuple[int, ...]]]) -> list[Any | None]:
    """The candidate's buffer for each (name, shape) of the reference's: same name and shape, else the
    one unmatched buffer of that shape whose last name part is the same (`running_var` for the
    reference's `bn.running_var`: a ModelNew holding a norm's state itself, in its own order), else the
    next unmatched floating buffer of that shape; None where it has none."""
    ours = floating_buffers(model)
    free = dict(ours)
    found: list[Any | None] = [None] * len(wanted)
    for index, (name, shape) in enumerate(wanted):
        tensor = free.get(name)
        if tensor is not None and tuple(tensor.shape) == shape:
            found[index] = free.pop(name)
    for index, (name, shape) in enumerate(wanted):
        if found[index] is None:
            same = [n for n, t in free.items() if _leaf(n) == _leaf(name) and tuple(t.shape) == shape]
            if len(same) == 1:  # two such buffers say nothing about which one is meant: order decides
                found[index] = free.pop(same[0])
    for index, (_, shape) in enumerate(wanted):
        if found[index] is None:
            spare = next((n for n, t in free.items() if tuple(t.shape) == shape), None)
            if spare is not None:
                found[index] = free.pop(spare)
    return found


def _leaf(name: str) -> str:
    return name.rpartition(".")[2]
