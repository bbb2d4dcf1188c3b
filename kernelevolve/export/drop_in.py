"""A winning `ModelNew` instance made safe at any shape: `OptimizeResult.as_module()`'s module.

The winner was checked at the searched shapes only; some winners (a compiler seed's per-shape
programs) refuse any other. The drop-in routes each call through `export.dispatch.Dispatcher`: the
kernel at the searched shapes, tried once on the caller's inputs for other shapes of a searched
shape's bucket (the sizes a ranged spec's case recorded, else power-of-two), the reference
computation (with the module's own weights) elsewhere.
`module.kernelevolve_dispatcher` records the path of every call.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kernelevolve.export.dispatch import AUDIT_EVERY, Dispatcher, signature
from kernelevolve.export.range_buckets import range_layouts
from kernelevolve.types import KernelSpec

if TYPE_CHECKING:
    import torch

WINNER = "best"
_served_classes: dict[type, type] = {}


class _Everything:
    def __contains__(self, item: object) -> bool:
        return True


def shape_signatures(spec: KernelSpec, namespace_for: Callable[[str], types.ModuleType]) -> dict[Any, str]:
    """The input signature of every shape of `spec` (made on the meta device), first shape first."""
    import torch

    from kernelevolve.specs import reference

    dtype = reference.torch_dtype(spec.dtype)
    out: dict[Any, str] = {}
    for shape in spec.shapes:
        with torch.device("meta"):
            inputs = reference.to_device(list(namespace_for(shape.name).get_inputs()), "meta", dtype)
        if all(isinstance(t, torch.Tensor) for t in inputs):
            out.setdefault(signature(inputs), shape.name)
    return out


def _served_forward(self: Any, *inputs: Any) -> Any:
    base: Any = type(self).__mro__[1]
    return self.kernelevolve_dispatcher.run(
        inputs,
        0,
        _Everything(),
        kernel=lambda _shape: base.forward(self, *inputs),
        reference=lambda: self.__dict__["_kernelevolve_reference"](self, inputs),
    )


def _served_class(base: type) -> type:
    if base not in _served_classes:
        _served_classes[base] = type(
            base.__name__,
            (base,),
            {"forward": _served_forward, "__module__": base.__module__, "__doc__": base.__doc__},
        )
    return _served_classes[base]


def served_module(
    model: torch.nn.Module,
    spec: KernelSpec,
    device_type: str,
    namespace_for: Callable[[str], types.ModuleType],
    reference_model: Callable[[str], torch.nn.Module],
) -> torch.nn.Module:
    """`model` (the winner, weights loaded) with its forward routed by signature.

    `reference_model(device)` builds the reference Model: on "meta" it is only a structure, called with
    `model`'s own parameters and buffers where their names match the reference's; where they differ
    the reference model (on the model's device) computes with its own seeded weights.
    """
    from torch.func import functional_call

    template = reference_model("meta")
    ours = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    theirs = [n for n, _ in template.named_parameters()] + [n for n, _ in template.named_buffers()]
    if sorted(ours) == sorted(theirs):

        def reference(self: Any, inputs: Any) -> Any:
            state = {**dict(self.named_parameters()), **dict(self.named_buffers())}
            return functional_call(template, state, tuple(inputs))

    else:
        own: dict[str, torch.nn.Module] = {}

        def reference(self: Any, inputs: Any) -> Any:
            device = str(inputs[0].device) if inputs else "cpu"
            if device not in own:
                own[device] = reference_model(device)
            return own[device](*inputs)

    served = {sig: WINNER for sig in shape_signatures(spec, namespace_for)}
    ranges = [replace(layout, shape=WINNER) for layout in range_layouts(spec)]  # one kernel serves all
    model.__class__ = _served_class(type(model))
    # a served call's audit runs the reference too: where it has buffers (running statistics) it would move
    # the model's own a second time, so such models are not audited
    audit_every = 0 if any(True for _ in template.buffers()) else AUDIT_EVERY
    model.__dict__["kernelevolve_dispatcher"] = Dispatcher(
        served, device_type, spec.atol, spec.rtol, ranges=ranges, label=spec.name, audit_every=audit_every
    )
    model.__dict__["_kernelevolve_reference"] = reference
    return model
