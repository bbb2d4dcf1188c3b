"""Inductor's forward and backward programs for a training spec at one shape, as torch.compile makes them.

The reference is compiled as `capture.py` compiles it, with gradients on for the inputs and parameters
the spec's backward names: Dynamo hands the graph to Inductor, whose AOTAutograd traces the joint
forward-backward graph and partitions it (Inductor's joint passes, then the min-cut partitioner). The
partition is recorded on its way through; Inductor then generates the forward's code, where the capture
stops it (nothing runs), and the recorded backward graph goes through Inductor's inner compile, stopped
after its code generation alike: the code torch.compile's backward would run.

The forward program returns the user's outputs, then what the backward saves; the backward program takes
the saved values, then one gradient per output ("tangents"), and returns one gradient per graph input
(None where none is needed).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kernelevolve.specs import reference
from kernelevolve.types import KernelSpec, ShapeCase
from kernelevolve.variation.compiler.capture import (
    CaptureError,
    _baked_constants,
    _example_inputs,
    _find_captured,
    _inductor_noting_inputs,
    _stop_after_codegen,
    _warnings_outside_the_graph,
)


@dataclass(frozen=True)
class JointCapture:
    shape: str
    input_shapes: tuple[tuple[int, ...], ...]  # of the tensor inputs, for dispatch at run time
    state_names: tuple[str, ...]  # parameters then buffers, the first flat arguments
    graph_inputs: tuple[int, ...]  # positions in [*state, *inputs] of the programs' graph inputs
    constants: tuple[tuple[int, Any], ...]  # (input position, value): scalars baked into the code
    forward_code: str
    backward_code: str
    outputs: int  # the user's outputs, first among the forward program's
    saved: int  # then what the backward saves (its first arguments, before the tangents)
    gradients: int  # the backward's outputs: one per graph input


def capture_joint(spec: KernelSpec, shape: ShapeCase, device: str) -> JointCapture:
    """Inductor's forward and backward code for `spec` at `shape` on `device` ("cpu": Triton for the
    interpreter); CaptureError where there is none (no backward in the spec, a graph it cannot take)."""
    import torch

    if spec.backward is None:
        raise CaptureError(f"spec {spec.name!r} has no backward")
    module = reference.load_reference(spec.reference_source)
    reference.apply_shape(module, shape)
    dtype = reference.torch_dtype(spec.dtype)
    model = reference.build_model(module.Model, module, 0, device, dtype, spec.mode)
    inputs = _example_inputs(module, device, dtype)
    wanted = spec.backward.parameters
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(wanted is None or name in wanted)
    positions = spec.backward.inputs
    for index, value in enumerate(inputs):
        floating = isinstance(value, torch.Tensor) and value.is_floating_point()
        if floating and (index in positions if positions is not None else True):
            inputs[index] = value.detach().requires_grad_(True)
    state: dict[str, Any] = dict(model.named_parameters())
    state.update(model.named_buffers())
    names = tuple(state)
    arguments = [*state.values(), *inputs]
    graph_inputs: list[int] = []
    ids: dict[int, int] = {}
    for index, value in enumerate(arguments):
        ids.setdefault(id(value), index)
    held = {"model": model}  # Dynamo keeps the closure past reset (capture.py): the model only through this

    def flat_call(*flat: Any) -> Any:
        bound = dict(zip(names, flat[: len(names)], strict=True))
        return torch.func.functional_call(held["model"], bound, tuple(flat[len(names) :]))

    parts: dict[str, Any] = {}
    torch._dynamo.reset()
    sys.modules[module.__name__] = module
    try:
        with _stop_after_codegen(device), _warnings_outside_the_graph(), _partition_recorded(parts):
            torch.compile(flat_call, fullgraph=True, backend=_inductor_noting_inputs(ids, graph_inputs))(
                *arguments
            )
        raise CaptureError("Inductor generated no code (the graph may have run eagerly)")
    except CaptureError:
        raise
    except Exception as exc:
        found = _find_captured(exc)
        if found is None or "backward" not in parts:
            raise CaptureError(f"{type(exc).__name__}: {str(exc)[:500]}") from exc
        forward_code = found.code
    finally:
        sys.modules.pop(module.__name__, None)
        held.clear()
        torch._dynamo.reset()
    backward_code = _backward_code(parts["backward"], device)
    outputs, saved, gradients = _layout(parts["forward"], parts["backward"], parts["outputs"])
    if gradients != len(graph_inputs):
        raise CaptureError(f"the backward returns {gradients} gradients for {len(graph_inputs)} graph inputs")
    return JointCapture(
        shape.name,
        tuple(tuple(t.shape) for t in inputs if isinstance(t, torch.Tensor)),
        names,
        tuple(graph_inputs),
        _baked_constants(inputs, {p - len(names) for p in graph_inputs}),
        forward_code,
        backward_code,
        outputs,
        saved,
        gradients,
    )


@contextlib.contextmanager
def _partition_recorded(parts: dict[str, Any]) -> Iterator[None]:
    """Inductor's partitioner, its forward and backward graphs noted in `parts` as they pass."""
    import torch._inductor.compile_fx as compile_fx

    partition = compile_fx.min_cut_rematerialization_partition

    def recorded(*args: Any, **kwargs: Any) -> Any:
        forward, backward = partition(*args, **kwargs)
        parts.update(forward=forward, backward=backward, outputs=kwargs.get("num_fwd_outputs"))
        return forward, backward

    compile_fx.min_cut_rematerialization_partition = recorded
    try:
        yield
    finally:
        compile_fx.min_cut_rematerialization_partition = partition


def _layout(forward: Any, backward: Any, outputs: Any) -> tuple[int, int, int]:
    """(user outputs, saved values, gradients), checked against each other: what the forward returns
    beyond the user's outputs is what the backward takes before the tangents, in order, all tensors."""
    if not isinstance(outputs, int):
        raise CaptureError("the partitioner did not say how many outputs are the user's")
    returned = list(forward.graph.output_node().args[0])
    taken = [n for n in backward.graph.nodes if n.op == "placeholder"]
    saved = returned[outputs:]
    tangents = [n for n in taken if n.name.startswith("tangents")]
    if len(tangents) != outputs or len(taken) != len(saved) + outputs:
        raise CaptureError(
            f"the backward takes {len(taken)} values; the forward saves {len(saved)} and has {outputs} outputs"
        )
    for value, node in zip(saved, taken, strict=False):
        if getattr(value, "name", None) != node.name or not _is_tensor(node):
            # both lists named: the GPU's partition has differed from the CPU's here (torch 2.11)
            raise CaptureError(
                f"saved value {node.name} is not a tensor the forward returns in order (the forward saves "
                f"{[getattr(v, 'name', repr(v)) for v in saved]}, the backward takes {[n.name for n in taken]})"
            )
    if not all(_is_tensor(t) and _meta(t).is_contiguous() for t in tangents):
        raise CaptureError("a tangent the backward takes is not a contiguous tensor")
    return outputs, len(saved), len(list(backward.graph.output_node().args[0]))


def _meta(node: Any) -> Any:
    return node.meta.get("val")


def _is_tensor(node: Any) -> bool:
    import torch

    return isinstance(_meta(node), torch.Tensor)


def _backward_code(backward: Any, device: str) -> str:
    """The backward graph through Inductor's inner compile, stopped after code generation, on example
    tensors laid out as its placeholders say (random on the CPU, uninitialised on a GPU)."""
    import torch
    from torch._inductor.compile_fx import compile_fx_inner

    examples = []
    for node in backward.graph.nodes:
        if node.op != "placeholder":
            continue
        like = _meta(node)
        tensor = torch.empty_strided(tuple(like.shape), tuple(like.stride()), dtype=like.dtype, device=device)
        if device == "cpu" and tensor.is_floating_point():
            tensor.normal_()
        elif device == "cpu":
            tensor.zero_()
        examples.append(tensor)
    try:
        with _stop_after_codegen(device):
            compile_fx_inner(backward, examples, is_backward=True)
    except Exception as exc:
        found = _find_captured(exc)
        if found is None:
            raise CaptureError(f"backward: {type(exc).__name__}: {str(exc)[:500]}") from exc
        return found.code
    raise CaptureError("Inductor generated no code for the backward")
