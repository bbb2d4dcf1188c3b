"""State a module changes when called (BatchNorm's running statistics in training mode, an RNN's hidden
state kept in a plain tensor attribute), which a drop-in kernel must change the same way.

The judge snapshots the reference's floating state (buffers, and tensors held in plain attributes) around
each of its calls; what changed is the state a candidate must leave behind too. The runner reads the
candidate's counterparts by name, else by the name's last part, else the next unmatched floating tensor of
the same shape, in order (a ModelNew that names its buffers its own way), and copies them into judge
slots; the judge compares them at the spec's tolerance. A call may replace a state tensor rather than
update it in place (`self.hidden = ...`), so state is put back by name (`current`), never by the object
found before the calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def snapshot(model: Any) -> dict[str, Any]:
    """Copies of the model's floating state (parameters are weights, not state a call changes)."""
    return {name: tensor.detach().clone() for name, tensor in floating_state(model).items()}


def changed(model: Any, before: Mapping[str, Any]) -> list[str]:
    """The state whose values differ from `before` (bit for bit, NaN payloads aside). A plain attribute a
    call replaces by a copy on another device (KernelBench's `self.h0 = self.h0.to(x.device)`, which
    `Module.to` does not move) is the same values, unchanged."""
    import torch

    now = floating_state(model)
    return [
        name
        for name, old in before.items()
        if name in now
        and not (
            now[name].shape == old.shape
            and now[name].dtype == old.dtype
            and torch.equal(now[name].detach().to(old.device).nan_to_num(), old.nan_to_num())
        )
    ]


def floating_state(model: Any) -> dict[str, Any]:
    """The floating tensors an nn.Module holds as state (none for any other callable): its buffers, then
    tensors in plain attributes of it and its submodules (exactly `torch.Tensor`: parameters are weights).
    KernelBench's VanillaRNN carries its hidden state from call to call in `self.hidden`."""
    import torch

    state = floating_buffers(model)
    if not state and not hasattr(model, "named_modules"):
        return {}
    for prefix, module in model.named_modules():
        for key, value in _own_dict(module).items():
            if type(value) is torch.Tensor and value.is_floating_point() and value.numel():
                state.setdefault(f"{prefix}.{key}" if prefix else key, value)
    return state


def floating_buffers(model: Any) -> dict[str, Any]:
    """The floating buffers of an nn.Module (none for any other callable)."""
    if not hasattr(model, "named_buffers"):
        return {}
    return {
        name: buffer
        for name, buffer in model.named_buffers()
        if buffer is not None and buffer.is_floating_point() and buffer.numel()
    }


def current(model: Any, name: str) -> Any:
    """The tensor `model` holds under `name` (a buffer or plain attribute, dotted through submodules) now, or
    None: read from the modules' own dictionaries, so no code of the module's runs (the runner resolves a
    candidate's state this way between timed calls)."""
    *path, leaf = name.split(".")
    module = model
    for part in path:
        modules = _own_dict(module).get("_modules")
        module = modules.get(part) if type(modules) is dict else None
        if module is None:
            return None
    own = _own_dict(module)
    buffers = own.get("_buffers")
    if type(buffers) is dict and leaf in buffers:
        return buffers[leaf]
    return own.get(leaf)


def _own_dict(module: Any) -> dict[str, Any]:
    """An nn.Module's instance dictionary by `Module`'s own descriptor (a class may make `__dict__` code)."""
    import torch

    try:
        found = vars(torch.nn.Module)["__dict__"].__get__(module)
    except TypeError:  # not a Module
        return {}
    return found if type(found) is dict else {}


def counterparts(model: Any, wanted: list[tuple[str, tuple[int, ...]]]) -> list[Any | None]:
    """The candidate's state tensor for each (name, shape) of the reference's (`counterpart_names`)."""
    ours = floating_state(model)
    return [None if name is None else ours[name] for name in counterpart_names(model, wanted)]


def counterpart_names(model: Any, wanted: list[tuple[str, tuple[int, ...]]]) -> list[str | None]:
    """The names of the candidate's (`model`'s) state standing for each (name, shape) of the reference's:
    same name and shape, else the one unmatched tensor of that shape whose last name part is the same
    (`running_var` for the reference's `bn.running_var`: a ModelNew holding a norm's state itself, in its
    own order), else the next unmatched buffer of that shape (a plain attribute only by name: one of the
    same shape may be a constant the kernel needs); None where it has none."""
    ours = floating_state(model)
    free = dict(ours)
    found: list[str | None] = [None] * len(wanted)
    for index, (name, shape) in enumerate(wanted):
        tensor = free.get(name)
        if tensor is not None and tuple(tensor.shape) == shape:
            free.pop(name)
            found[index] = name
    for index, (name, shape) in enumerate(wanted):
        if found[index] is None:
            same = [n for n, t in free.items() if _leaf(n) == _leaf(name) and tuple(t.shape) == shape]
            if len(same) == 1:  # two such tensors say nothing about which one is meant: order decides
                free.pop(same[0])
                found[index] = same[0]
    buffers = floating_buffers(model)
    for index, (_, shape) in enumerate(wanted):
        if found[index] is None:
            spare = next((n for n, t in free.items() if n in buffers and tuple(t.shape) == shape), None)
            if spare is not None:
                free.pop(spare)
                found[index] = spare
    return found


def _leaf(name: str) -> str:
    return name.rpartition(".")[2]
