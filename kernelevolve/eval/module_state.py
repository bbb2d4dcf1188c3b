"""State a module changes when called (BatchNorm's running statistics in training mode, an RNN's hidden
state kept in a plain tensor attribute, a step counter, a list of past means, a parameter moved in place),
which a drop-in kernel must change the same way.

The judge snapshots the reference's state (`state`: buffers and plain attributes holding tensors of any
dtype, Python numbers, or plain lists, tuples and dicts of those; and a fingerprint of each parameter) around
each of its calls; what changed is the state timed calls are put back to, on both sides, before every call
(`timed_checks`, `timed_guard.put_back_state`), and the floating buffers among it are compared after each
correctness trial. The runner finds the candidate's counterparts by name, else by the name's last part,
else the next unmatched buffer of the same shape, else the next state its own checked calls moved of the
same kind (`counterpart_names`). A call may replace its state rather than update it (`self.hidden = ...`),
so state is put back by name (`current`), never by the object found before the calls.

Everything here reads modules through their own dictionaries (`own_dict`, `walk`) and takes only tensors
that are exactly PyTorch's: no method of a candidate's module or tensor runs when the runner reads its state.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

SCALARS = (bool, int, float)
# What a rejection for state says of how ModelNew's state is matched to the reference's (`counterpart_names`)
COUNTERPART_RULES = (
    "ModelNew's counterpart of a state the reference moves is its state of the same name, else the one "
    "with the same last name part (`running_mean`), else its next buffer of that shape in the order it "
    "registers them, else the next value of that kind its own calls change; keep the reference's names, "
    "or its order, for state of one shape"
)
_CONTAINERS = (list, tuple, dict)


class _Fingerprint:
    """A parameter's values summed (and their magnitudes): a changed weight shows, without cloning every weight
    of a multi-GB model per trial. An update that keeps both sums (a permutation) is not seen."""

    def __init__(self, tensor: Any) -> None:
        self.value = _fingerprint(tensor)

    def same(self, tensor: Any) -> bool:
        return _fingerprint(tensor) == self.value


def _fingerprint(tensor: Any) -> tuple[Any, ...]:
    import torch

    data = tensor.detach()
    if data.is_complex() or not data.numel():
        return (tuple(data.shape), data.dtype)
    total = torch.sum(data, dtype=torch.float64).nan_to_num()
    size = torch.sum(data.abs(), dtype=torch.float64).nan_to_num()
    return (tuple(data.shape), data.dtype, float(total), float(size))


def snapshot(model: Any, parameters: bool = True) -> dict[str, Any]:
    """Copies of the model's state, and (`parameters`) each parameter's fingerprint."""
    copies: dict[str, Any] = {name: copied(value) for name, value in state(model).items()}
    if parameters:
        copies.update((name, _Fingerprint(p)) for name, p in model_parameters(model).items())
    return copies


def changed(model: Any, before: Mapping[str, Any]) -> list[str]:
    """The state whose values differ from `before` (bit for bit, NaN payloads aside). A plain attribute a
    call replaces by a copy on another device (KernelBench's `self.h0 = self.h0.to(x.device)`, which
    `Module.to` does not move) is the same values, unchanged."""
    now = {**state(model), **model_parameters(model)}
    return [name for name, old in before.items() if name in now and not _same(now[name], old)]


def _same(now: Any, old: Any) -> bool:
    import torch

    if isinstance(old, _Fingerprint):
        return old.same(now)
    if type(now) is not type(old) and not (isinstance(now, torch.Tensor) and isinstance(old, torch.Tensor)):
        return False
    if isinstance(old, torch.Tensor):
        if now.shape != old.shape or now.dtype != old.dtype:
            return False
        there = now.detach().to(old.device)
        if old.is_floating_point() or old.is_complex():
            return torch.equal(there.nan_to_num(), old.nan_to_num())
        return torch.equal(there, old)
    if isinstance(old, dict):
        return list(now) == list(old) and all(_same(now[k], old[k]) for k in old)
    if isinstance(old, (list, tuple)):
        return len(now) == len(old) and all(_same(a, b) for a, b in zip(now, old, strict=True))
    if isinstance(old, float) and math.isnan(old):
        return math.isnan(now)
    return bool(now == old)


def copied(value: Any) -> Any:
    """A deep copy of a state value: tensors cloned, containers rebuilt, numbers as they are."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if type(value) is dict:
        return {k: copied(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(copied(v) for v in value)
    return value


def walk(model: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted prefix, module) for the module and its submodules, through the modules' own `_modules`
    dictionaries (`named_modules` is a method a candidate's class may define). None for another callable."""
    if not own_dict(model):
        return
    yield prefix, model
    modules = own_dict(model).get("_modules")
    for key, child in (modules if type(modules) is dict else {}).items():
        if child is not None:
            yield from walk(child, f"{prefix}.{key}" if prefix else key)


def state(model: Any) -> dict[str, Any]:
    """What an nn.Module holds as state (none for any other callable): its buffers, then plain attributes of
    it and its submodules holding an exact tensor, a Python number (a step counter) or a plain list, tuple or
    dict of those (past means). Parameters are weights (`model_parameters`). KernelBench's VanillaRNN carries
    its hidden state from call to call in `self.hidden`."""
    from kernelevolve.eval.own_work import exact

    found: dict[str, Any] = {}
    modules = list(walk(model))
    for prefix, module in modules:
        buffers = own_dict(module).get("_buffers")
        for key, buffer in (buffers if type(buffers) is dict else {}).items():
            if exact(buffer, parameters=True) and buffer.numel():
                found[f"{prefix}.{key}" if prefix else key] = buffer
    for prefix, module in modules:
        for key, value in own_dict(module).items():
            name = f"{prefix}.{key}" if prefix else key
            if key == "training" or name in found:
                continue
            if (type(value) is not type(None) and plain_value(value, top=True)) and not (
                type(value) in _CONTAINERS and key.startswith("_")  # a module's own registries
            ):
                found[name] = value
    return found


def plain_value(value: Any, top: bool = False) -> bool:
    """An exact non-empty tensor, a Python number, or a plain container of those (None and str beside them)
    holding at least one tensor or number."""
    from kernelevolve.eval.own_work import exact

    kind = type(value)
    if exact(value):
        return bool(value.numel())
    if kind in SCALARS:
        return True
    if kind in _CONTAINERS:
        items = list(value.values()) if kind is dict else list(value)
        if kind is dict and not all(type(k) is str for k in value):
            return False
        leaves = [v for v in items if type(v) not in (type(None), str)]
        return bool(leaves) and all(plain_value(v) for v in leaves)
    return not top and kind in (type(None), str)


def model_parameters(model: Any) -> dict[str, Any]:
    """Every parameter of the module and its submodules, by dotted name, through their own dictionaries."""
    found: dict[str, Any] = {}
    for prefix, module in walk(model):
        params = own_dict(module).get("_parameters")
        for key, param in (params if type(params) is dict else {}).items():
            if param is not None:
                found[f"{prefix}.{key}" if prefix else key] = param
    return found


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
    """The value `model` holds under `name` (a buffer, parameter or plain attribute, dotted through
    submodules) now, or None: read from the modules' own dictionaries, so no code of the module's runs (the
    runner resolves a candidate's state this way between timed calls)."""
    owner, leaf = owner_of(model, name)
    if owner is None:
        return None
    own = own_dict(owner)
    for registry in ("_buffers", "_parameters"):
        held = own.get(registry)
        if type(held) is dict and leaf in held:
            return held[leaf]
    return own.get(leaf)


def owner_of(model: Any, name: str) -> tuple[Any, str]:
    """The (sub)module holding `name`, and the name's last part; (None, leaf) where there is none."""
    *path, leaf = name.split(".")
    module = model
    for part in path:
        modules = own_dict(module).get("_modules")
        module = modules.get(part) if type(modules) is dict else None
        if module is None:
            return None, leaf
    return module, leaf


def own_dict(module: Any) -> dict[str, Any]:
    """An nn.Module's instance dictionary by `Module`'s own descriptor (a class may make `__dict__` code)."""
    import torch

    try:
        found = vars(torch.nn.Module)["__dict__"].__get__(module)
    except TypeError:  # not a Module
        return {}
    return found if type(found) is dict else {}


def signature(value: Any) -> Any:
    """What a counterpart must share with a state value: a floating tensor's shape (as before), another
    tensor's shape and kind, a number's type, a container's layout."""
    import torch

    if isinstance(value, torch.Tensor):
        return tuple(value.shape) if value.is_floating_point() else ("tensor", tuple(value.shape))
    if type(value) is dict:
        return ("dict", tuple((k, signature(v)) for k, v in value.items()))
    if type(value) in (list, tuple):
        return (type(value).__name__, tuple(signature(v) for v in value))
    return type(value).__name__


def loose(sign: Any) -> Any:
    """A `signature` as a counterpart's is matched to it: a tensor by its shape less its size-1 dimensions
    (a running mean kept as a `(1, C, 1, 1)` buffer to broadcast, or a step count as a `(1,)` one, holds the
    same elements in the same order as the reference's `(C,)` or 0-d one), a Python number the same as a
    tensor of its kind holding one element (a batch count kept as an int for BatchNorm's
    `num_batches_tracked`), a tuple the same as a list. Either holds the same values, put back and read leaf
    by leaf, reshaped to the other's shape (`timed_guard.put_back_state`, `timed_state.record`)."""
    if sign in ("int", "bool"):
        return ("tensor", ())
    if sign == "float":
        return ()
    if _shape(sign):  # a floating tensor's signature is its shape
        return _squeezed(sign)
    if type(sign) is tuple and len(sign) == 2 and sign[0] == "tensor" and _shape(sign[1]):
        return ("tensor", _squeezed(sign[1]))
    if type(sign) is tuple and len(sign) == 2 and sign[0] in ("list", "tuple", "dict"):
        kind = "dict" if sign[0] == "dict" else "list"
        if kind == "dict":
            return (kind, tuple((key, loose(item)) for key, item in sign[1]))
        return (kind, tuple(loose(item) for item in sign[1]))
    return sign


def _shape(sign: Any) -> bool:
    return type(sign) is tuple and all(type(d) is int for d in sign)


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def counterparts(model: Any, wanted: list[tuple[str, Any]]) -> list[Any | None]:
    """The candidate's state value for each (name, signature) of the reference's (`counterpart_names`)."""
    return [None if name is None else current(model, name) for name in counterpart_names(model, wanted)]


def counterpart_names(
    model: Any, wanted: list[tuple[str, Any]], moving: frozenset[str] = frozenset()
) -> list[str | None]:
    """The names of the candidate's (`model`'s) state standing for each (name, signature) of the reference's:
    same name and signature, else the one unmatched value of that signature whose last name part is the
    same (`running_var` for the reference's `bn.running_var`: a ModelNew holding a norm's state itself, in its
    own order), else the next unmatched buffer of that signature, else the next unmatched value of that
    signature among `moving`, what the candidate's own checked calls changed (`self.h` for the reference's
    `self.hidden`). Signatures match `loose`ly (a count kept as an int or a 0-d tensor, a list as a tuple);
    a spare of the very signature is taken before one of another form. A plain attribute no checked call
    moved is never a spare: one of the same shape may be a constant the kernel needs (overwritten, an honest
    kernel failed). None where it has none."""
    ours = {**state(model), **model_parameters(model)}
    free = {name: signature(value) for name, value in ours.items()}
    found: list[str | None] = [None] * len(wanted)

    def fits(have: Any, sign: Any, exact: bool = False) -> bool:
        return have == sign if exact else loose(have) == loose(sign)

    for index, (name, sign) in enumerate(wanted):
        if name in free and fits(free[name], sign):
            free.pop(name)
            found[index] = name
    for index, (name, sign) in enumerate(wanted):
        if found[index] is None:
            same = [n for n, s in free.items() if _leaf(n) == _leaf(name) and fits(s, sign)]
            if len(same) == 1:  # two such values say nothing about which one is meant: order decides
                free.pop(same[0])
                found[index] = same[0]
    buffers = {name for prefix, module in walk(model) for name in _buffer_names(prefix, module)}
    for spares in (buffers, moving):
        for exact in (True, False):
            for index, (_, sign) in enumerate(wanted):
                if found[index] is None:
                    spare = next((n for n, s in free.items() if n in spares and fits(s, sign, exact)), None)
                    if spare is not None:
                        free.pop(spare)
                        found[index] = spare
    return found


def _buffer_names(prefix: str, module: Any) -> list[str]:
    buffers = own_dict(module).get("_buffers")
    return [f"{prefix}.{key}" if prefix else key for key in (buffers if type(buffers) is dict else {})]


def _leaf(name: str) -> str:
    return name.rpartition(".")[2]
