"""A training spec's model as one call: forward, then backward, with the gradients returned as outputs.

For a spec with `backward` (`types.Backward`) the judge and the runner wrap their model (the reference in
the judge, ModelNew in the runner) in a `TrainingStep`. Called on the reference's inputs followed by one
tuple of upstream gradients (one per forward output tensor), it runs the forward with gradients on, then
the backward through `torch.autograd.grad` with those upstream gradients, and returns
``(outputs, input gradients, parameter gradients)``, detached. The harness checks and times that call as
it does a forward spec's, so every check it has (guard bands, poisoned output slots, unchanged inputs, the
upstream gradients included, secret checks of timed calls on refreshed inputs) covers the gradients too,
which cross to the judge as more outputs. The reference's gradients are PyTorch's autograd of the
reference.

The judge's reference module is the spec's source with `judged_source`'s suffix: its `Model` is the
training step, and its `get_inputs()` draws the upstream gradients right after the inputs from the same
seeded generator, so they are fresh per correctness trial and per timed call, and (timed calls) per
evaluation, as the inputs are.

The forward's outputs come back after the backward ran, so in the runner the step shows them to a probe
as the forward returns (`eval/forward_probe.py`): one the backward finished fails, as a model's next layer
reads them before any backward.

A candidate is judged by what it computes: a gradient that does not reach an input or parameter (a forward
outside autograd: a kernel called without a torch.autograd.Function, or under no_grad) counts as zeros. A
candidate whose backward is PyTorch's autograd of its own forward passes on values in permissive mode; in
strict mode the backward runs inside the traced call, so PyTorch compute there is a violation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch

from kernelevolve.specs.reference import map_tensors, same_elements
from kernelevolve.types import Backward, KernelSpec


def judged_source(spec: KernelSpec) -> str:
    """The judge's reference source for `spec`: the spec's own, whose `Model` and `get_inputs()` become the
    training step's (the forward spec's source unchanged where the spec has no backward)."""
    if spec.backward is None:
        return spec.reference_source
    return spec.reference_source.rstrip("\n") + _SUFFIX.format(backward=spec.backward.to_json())


# Executed after the reference on every (re)load, so a shape's constants apply to the forward model first.
_SUFFIX = """


# ---- kernelevolve: the training step of this spec (kernelevolve/specs/training.py) ----
from kernelevolve.specs.training import training_model as _ke_training_model
from kernelevolve.specs.training import upstream_gradients as _ke_upstream_gradients

_KeForwardModel = Model
_ke_forward_inputs = get_inputs
Model = _ke_training_model(_KeForwardModel, {backward!r})


def get_inputs():
    inputs = list(_ke_forward_inputs())
    return [*inputs, _ke_upstream_gradients(_KeForwardModel, get_init_inputs(), inputs)]
"""


def backward_problem(spec: KernelSpec) -> str | None:
    """None where the spec's backward names inputs and parameters its reference has (checked on meta
    tensors at the first shape), else what is wrong."""
    from kernelevolve.specs.reference_module import load_reference_module

    assert spec.backward is not None
    module = load_reference_module(spec.reference_source, spec.shapes[0].params)
    with torch.device("meta"):
        inputs = list(module.get_inputs())
        names = {name for name, _ in module.Model(*module.get_init_inputs()).named_parameters()}
    floating = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]
    bad = sorted(set(spec.backward.inputs or ()) - set(floating))
    if bad:
        return f"backward.inputs {bad} are not floating tensor inputs (those are {floating})"
    missing = sorted(set(spec.backward.parameters or ()) - names)
    if missing:
        return f"backward.parameters {missing} are not parameters of Model (it has {sorted(names)})"
    return None


def training_model(forward_class: Callable[..., Any], backward: dict[str, Any]) -> type:
    """A class built like `forward_class` (same constructor arguments) that is its training step."""

    class Step(TrainingStep):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(forward_class(*args, **kwargs), backward)

    Step.__name__ = Step.__qualname__ = getattr(forward_class, "__name__", "Model")
    return Step


def upstream_gradients(
    forward_class: Callable[..., Any], init_inputs: Sequence[Any], inputs: list[Any]
) -> tuple:
    """A standard-normal upstream gradient per floating output tensor of the forward model (None for
    another output), shaped as the output is, drawn from the current generator on the current device."""
    return tuple(
        torch.randn(tuple(leaf.shape)) if leaf.is_floating_point() else None
        for leaf in _output_leaves(forward_class, init_inputs, inputs)
    )


def _output_leaves(
    forward_class: Callable[..., Any], init_inputs: Sequence[Any], inputs: list[Any]
) -> list[Any]:
    """The forward's output tensors, on meta tensors where the model runs there (nothing computed, no
    generator drawn), else for real on a copy of the generator's state."""
    meta = lambda tensor: tensor.to("meta")  # noqa: E731
    try:
        with torch.device("meta"), torch.no_grad():
            model = forward_class(*map_tensors(meta, list(init_inputs)))
            return leaves(model(*map_tensors(meta, inputs)))
    except Exception:  # noqa: BLE001 - a forward meta tensors cannot run: for real, its draws undone
        state = torch.get_rng_state()
        try:
            with torch.no_grad():
                return leaves(forward_class(*init_inputs)(*inputs))
        finally:
            torch.set_rng_state(state)


def leaves(value: Any) -> list[Any]:
    """The tensors in a (nested) value, in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in leaves(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in leaves(item)]
    return []


def as_returned(value: Any) -> Any:
    """`value` as the forward returned it: plain lists and tuples (a tuple subclass read by tuple's own C
    iterator) made anew, so no `__iter__` of the candidate's runs when the step walks it, and nothing the
    backward does to the forward's containers reaches the step's output. A tuple subclass yielding other
    tensors once the backward had filled them returned outputs the probe never saw
    (`tests/adversarial/hacks/backward_fills_forward_output_via_tuple_iter.py`). Anything else is left
    as it is for the output checks (a list subclass, a dict fail there)."""
    kind = type(value)
    if issubclass(kind, tuple):
        return tuple(as_returned(item) for item in tuple.__iter__(value))
    if kind is list:
        return [as_returned(item) for item in list.__iter__(value)]
    return value


class OutputProbe(Protocol):
    """What the runner's step shows the forward's outputs to, before the backward runs."""

    def take(self, outputs: list[Any]) -> None: ...


class TrainingStep(torch.nn.Module):
    """`model`'s forward and backward as one call (see the module's docstring). Its parameters are the
    model's, under `model.`: the judge's reference and the runner's ModelNew are named alike."""

    def __init__(self, model: Any, backward: dict[str, Any]) -> None:
        super().__init__()
        self.model = model
        spec = Backward.from_json(backward)
        self.input_positions = spec.inputs
        own = dict(model.named_parameters())
        names = spec.parameters
        if names is None:
            names = tuple(name for name, p in own.items() if p.requires_grad)
        missing = sorted(set(names) - set(own))
        if missing:
            raise ValueError(f"backward.parameters names {missing}, which the model does not have")
        # The parameters whose gradients the step returns, in order (None: no counterpart, zeros), and
        # the shapes their gradients have (the reference's)
        self.parameter_names: list[str | None] = list(names)
        self.parameter_shapes: list[tuple[int, ...]] = [tuple(own[name].shape) for name in names]
        self._resolve()
        # The runner's: sees the forward's outputs as the forward returns (`eval/forward_probe.py`)
        self.probe: OutputProbe | None = None

    def _resolve(self) -> None:
        """The parameter objects named, looked up now and held for every call, as an optimizer holds them:
        asking the model (`named_parameters()`, which it may override) inside each call told a step from
        the forward timed alone (`tests/adversarial/hacks/forward_alone_told_by_named_parameters.py`)."""
        own = dict(self.model.named_parameters())
        self._targets: list[Any] = [None if name is None else own.get(name) for name in self.parameter_names]

    def _apply(self, *args: Any, **kwargs: Any) -> Any:
        """`.to()` and kin: held again where a conversion made new parameter objects."""
        moved = super()._apply(*args, **kwargs)
        self._resolve()
        return moved

    def wanted(self) -> list[tuple[str, list[int]]]:
        """The parameters needing gradients, (name, shape), in the order of their gradients."""
        return [
            (str(name), list(shape))
            for name, shape in zip(self.parameter_names, self.parameter_shapes, strict=True)
            if name is not None
        ]

    def bind(self, wanted: Sequence[tuple[str, Sequence[int]]]) -> None:
        """Which of this model's parameters stand for the reference's `wanted` ones: the same name and
        shape, else the next unmatched parameter of that shape, else of that shape up to size-1
        dimensions; None (its gradient counts as zeros) where none is left. Runs in the runner, on the
        judge's list."""
        free = {name: tuple(p.shape) for name, p in self.model.named_parameters()}
        shapes = [tuple(int(d) for d in shape) for _, shape in wanted]
        chosen: list[str | None] = []
        for (name, _), shape in zip(wanted, shapes, strict=True):
            chosen.append(name if free.get(name) == shape else None)
            if chosen[-1] is not None:
                free.pop(name)
        # then one whose shape differs only by size-1 dimensions (a weight kept as (1, C) to broadcast):
        # its gradient holds the same elements in the same order, reshaped to the reference's (`step`)
        for fits in (lambda have, shape: have == shape, same_elements):
            for index, shape in enumerate(shapes):
                if chosen[index] is None:
                    spare = next((n for n, s in free.items() if fits(s, shape)), None)
                    if spare is not None:
                        chosen[index] = spare
                        free.pop(spare)
        self.parameter_names, self.parameter_shapes = chosen, shapes
        self._resolve()

    def forward(self, *arguments: Any) -> Any:
        *inputs, upstream = arguments
        return self.step(self.model, inputs, upstream)

    def forward_pass(self, *arguments: Any) -> Any:
        """The forward alone, as a training step runs it (gradients on, the graph built): timed apart."""
        *inputs, _ = arguments
        inputs, _ = self._tracked_inputs(inputs)
        with torch.enable_grad():
            return map_tensors(lambda t: t.detach(), as_returned(self.model(*inputs)))

    def compiled(
        self, options: dict[str, Any] | None = None, forward_only: bool = False
    ) -> Callable[..., Any]:
        """This step with the model under torch.compile (`options`: Inductor's; AOTAutograd compiles the
        backward too, on the first call): a training spec's torch.compile baseline; `forward_only`: its
        forward pass alone, as `forward_pass`."""
        compiled = torch.compile(self.model, options=options)

        def call(*arguments: Any) -> Any:
            *inputs, upstream = arguments
            if forward_only:
                tracked, _ = self._tracked_inputs(inputs)
                with torch.enable_grad():
                    return map_tensors(lambda t: t.detach(), as_returned(compiled(*tracked)))
            return self.step(compiled, inputs, upstream)

        return call

    def gradient_labels(self, inputs: Sequence[Any]) -> tuple[list[str], list[str]]:
        """What the gradients in the step's output on `inputs` are: output[1][k] (inputs), output[2][k]."""
        return [f"the gradient of input {p}" for p in self._positions(inputs)], [
            f"the gradient of parameter {name!r}" for name, _ in self.wanted()
        ]

    # ---------------------------------------------------------------------------------------------
    def step(self, model: Callable[..., Any], inputs: list[Any], upstream: Sequence[Any]) -> Any:
        """`model`'s forward on `inputs`, its backward from `upstream`: (outputs, input grads, parameter
        grads), detached; a gradient that does not reach its target counts as zeros."""
        inputs, positions = self._tracked_inputs(inputs)
        targets = [inputs[p] for p in positions] + list(self._targets)
        with torch.enable_grad():
            output = as_returned(model(*inputs))  # what the backward may change is the tensors, not this
            if self.probe is not None:  # before the backward: the outputs must be final already
                self.probe.take(leaves(output))
            wrt = [t for t in targets if isinstance(t, torch.Tensor) and t.requires_grad]
            pairs = [
                (out, grad)
                for out, grad in zip(leaves(output), upstream, strict=False)
                if grad is not None and out.requires_grad
            ]
            found: Sequence[Any] = [None] * len(wrt)
            if wrt and pairs:
                found = torch.autograd.grad(
                    [out for out, _ in pairs],
                    wrt,
                    [grad if grad.dtype == out.dtype else grad.to(out.dtype) for out, grad in pairs],
                    allow_unused=True,
                )
        by_target = {id(t): g for t, g in zip(wrt, found, strict=True)}
        held = leaves(inputs) + leaves(list(upstream))
        anchor = held[0] if held else torch.empty(())
        shapes = [tuple(inputs[p].shape) for p in positions] + self.parameter_shapes
        grads = []
        for target, shape in zip(targets, shapes, strict=True):
            grad = None if target is None else by_target.get(id(target))
            if grad is None:
                like = target if target is not None else anchor
                grad = torch.zeros(shape, dtype=like.dtype, device=like.device)
            if tuple(grad.shape) != shape:  # a (1, C) weight's gradient for the reference's (C,) one
                grad = grad.reshape(shape)
            grads.append(_own_memory(grad, held).detach())
        count = len(positions)
        return map_tensors(lambda t: t.detach(), output), tuple(grads[:count]), tuple(grads[count:])

    def _tracked_inputs(self, inputs: Sequence[Any]) -> tuple[list[Any], list[int]]:
        """The inputs, those needing gradients replaced by detached views of them that require them."""
        inputs = list(inputs)
        positions = self._positions(inputs)
        for position in positions:
            if position >= len(inputs) or not isinstance(inputs[position], torch.Tensor):
                raise ValueError(f"backward.inputs names input {position}, which is no tensor input")
            inputs[position] = inputs[position].detach().requires_grad_(True)
        return inputs, positions

    def _positions(self, inputs: Sequence[Any]) -> list[int]:
        if self.input_positions is not None:
            return list(self.input_positions)
        return [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]


_PATH = re.compile(r"output\[(\d)\](?:\[(\d+)\])?")
_NO_GRADIENT_HINT = (
    "\nA gradient that does not reach an input or parameter counts as zeros: ModelNew's forward must be "
    "differentiable, its output made by a torch.autograd.Function (or a custom op with a registered "
    "autograd) whose backward computes the gradients of the inputs and parameters that need them."
)


def explained(feedback: str, step: Any, check: str, arguments: Sequence[Any]) -> str:
    """A correctness verdict's feedback on a training step called on `arguments`, its output paths named
    (the forward's output, which input's or parameter's gradient), with a hint where a gradient is wrong."""
    inputs, parameters = step.gradient_labels(list(arguments)[:-1])

    def name(match: re.Match[str]) -> str:
        part, index = int(match.group(1)), match.group(2)
        labels = inputs if part == 1 else parameters
        if part == 0:
            return f"{match.group(0)} (the forward's output)"
        if index is None or int(index) >= len(labels):
            return match.group(0)
        return f"{match.group(0)} ({labels[int(index)]})"

    text = _PATH.sub(name, feedback)
    if check in ("mismatch", "nonfinite") and re.search(r"output\[[12]\]", feedback):
        text += _NO_GRADIENT_HINT
    return text


def _own_memory(grad: Any, held: list[Any]) -> Any:
    """A gradient that shares memory with an input or an upstream gradient (PyTorch passes an upstream
    gradient through unchanged where the derivative is one), copied, so the judge's aliasing check of the
    outputs stays a check of the forward."""
    start = grad.untyped_storage().data_ptr()
    end = start + grad.untyped_storage().nbytes()
    for tensor in held:
        other = tensor.untyped_storage()
        if grad.numel() and start < other.data_ptr() + other.nbytes() and other.data_ptr() < end:
            return grad.clone()
    return grad
