"""Inductor's generated wrapper module for a reference at one shape, captured at code generation.

The reference is compiled as a function of explicit arguments, its parameters and buffers (in
`named_parameters()` then `named_buffers()` order) followed by its inputs. Dynamo keeps only the
arguments the graph reads (an unused buffer or parameter is dropped) and bakes Python scalars in as
constants, so the generated `call` receives a subset of them: which ones, in order, is recorded from
the graph Dynamo hands Inductor. Code generation is stopped right after Inductor writes the module:
nothing runs, so capturing on a GPU does not disturb measurements. On the CPU, Inductor is asked for
Triton (instead of C++) code, which the Triton interpreter can run.

`CaptureSettings` say how else the program is asked for: with Inductor's layout optimisation off, or
with attention traced as matmuls; a seed records those that differ from Inductor's own, so that a
re-capture (fusion_boundary) asks alike.
"""

from __future__ import annotations

import ast
import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

from kernelevolve.specs import reference
from kernelevolve.types import KernelSpec, ShapeCase


class CaptureError(Exception):
    """Inductor could not generate code for this reference (or not as Triton)."""


class _Captured(Exception):
    def __init__(self, code: str, attention_head_dim: int) -> None:
        super().__init__("captured")
        self.code = code
        self.attention_head_dim = attention_head_dim


@dataclass(frozen=True)
class CaptureSettings:
    """How Inductor's program is asked for, beyond config patches: what a re-capture must repeat."""

    # False keeps convolutions in the reference's layout (NCHW) where Inductor would convert to
    # channels-last around them (GPU only), which is sometimes much slower.
    layout_optimization: bool = True
    # True traces scaled_dot_product_attention through PyTorch's math backend: a softmax between two
    # batched matmuls (library bmm calls) in place of the fused op, which seeds can route through the
    # library's TF32+BF16 split or our GEMM, and whose head size our attention kernel does not bound.
    attention_as_matmuls: bool = False

    def recorded(self) -> dict[str, bool]:
        """The settings that differ from Inductor's own, as a seed's metadata records them."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != f.default}

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> CaptureSettings:
        """The settings a seed (or a descendant) was captured with, from its metadata (`recorded`)."""
        return cls(
            layout_optimization=metadata.get("layout_optimization", True) is not False,
            attention_as_matmuls=bool(metadata.get("attention_as_matmuls", False)),
        )


INDUCTORS_OWN = CaptureSettings()


@dataclass(frozen=True)
class CapturedCode:
    shape: str
    input_shapes: tuple[tuple[int, ...], ...]  # of the tensor inputs, for dispatch at run time
    state_names: tuple[str, ...]  # parameters then buffers, the first flat arguments
    input_count: int
    code: str
    graph_inputs: tuple[int, ...]  # positions in [*state, *inputs] of `call`'s arguments, in order
    constants: tuple[tuple[int, Any], ...] = ()  # (input position, value): scalars baked into the code
    attention_head_dim: int = 0  # the largest head size of a fused attention op in the graph (0: none)


def capture(
    spec: KernelSpec,
    shape: ShapeCase,
    device: str,
    settings: CaptureSettings = INDUCTORS_OWN,
    inductor_config: Mapping[str, Any] | None = None,
) -> CapturedCode:
    """Generate Inductor's module for `spec` at `shape` on `device` ("cpu" or "cuda") as `settings` say;
    `inductor_config`: further `torch._inductor.config` patches (dotted keys), such as those that move
    kernel boundaries."""
    import torch

    module = reference.load_reference(spec.reference_source)
    reference.apply_shape(module, shape)
    dtype = reference.torch_dtype(spec.dtype)
    model = reference.build_model(module.Model, module, 0, device, dtype, spec.mode)
    inputs = _example_inputs(module, device, dtype)
    state: dict[str, Any] = dict(model.named_parameters())
    state.update(model.named_buffers())
    names = tuple(state)

    arguments = [*state.values(), *inputs]
    graph_inputs: list[int] = []  # filled in by the backend
    positions: dict[int, int] = {}
    for index, value in enumerate(arguments):
        positions.setdefault(id(value), index)
    backend = _inductor_noting_inputs(positions, graph_inputs)
    # Dynamo keeps the compiled callable (and through it this closure) in process-wide wrappers past
    # `reset()`; a closure holding the model or the inputs kept them on the GPU for the rest of a sweep
    # (130 GB on GPU 0 in the first full-sweep chunk), so it reaches the model only through `held`.
    held = {"model": model}

    def flat_call(*flat: Any) -> Any:
        bound = dict(zip(names, flat[: len(names)], strict=True))
        return torch.func.functional_call(held["model"], bound, tuple(flat[len(names) :]))

    torch._dynamo.reset()
    sys.modules[module.__name__] = module  # Dynamo looks the forward's globals up by module name
    try:
        with (
            _stop_after_codegen(device, settings.layout_optimization, inductor_config),
            _warnings_outside_the_graph(),
            _attention_backend(settings.attention_as_matmuls),
            torch.no_grad(),
        ):
            # fullgraph: a graph break would leave Inductor's first graph alone, a program that does
            # only part of the work (L2/28's InstanceNorm warns, which breaks the graph)
            torch.compile(flat_call, fullgraph=True, backend=backend)(*arguments)
    except _Captured as done:
        captured = done
    except Exception as exc:
        found = _find_captured(exc)
        if found is None:
            raise CaptureError(f"{type(exc).__name__}: {str(exc)[:500]}") from exc
        captured = found
    else:
        raise CaptureError("Inductor generated no code (the graph may have run eagerly)")
    finally:
        sys.modules.pop(module.__name__, None)
        held.clear()
        torch._dynamo.reset()
    if "def call(" not in captured.code:
        raise CaptureError("Inductor generated no wrapper module for this reference")
    shapes = tuple(tuple(t.shape) for t in inputs if isinstance(t, torch.Tensor))
    constants = _baked_constants(inputs, {p - len(names) for p in graph_inputs})
    return CapturedCode(
        shape.name,
        shapes,
        names,
        len(inputs),
        captured.code,
        tuple(graph_inputs),
        constants,
        captured.attention_head_dim,
    )


def _inductor_noting_inputs(positions: dict[int, int], graph_inputs: list[int]) -> Callable[..., Any]:
    """Inductor as the backend, after noting which arguments the graph's inputs are, in order.

    Dynamo hands the backend the real argument objects, so identity finds each one's position
    (`positions`: id of each argument -> its first position; ids, not the arguments, because the
    backend outlives the capture). The arguments stay alive while Dynamo runs, so ids are unique.
    """
    from torch._inductor.compile_fx import compile_fx

    def backend(graph: Any, example_inputs: list[Any]) -> Any:
        graph_inputs[:] = [_position(value, positions) for value in example_inputs]
        return compile_fx(graph, example_inputs)

    return backend


def _position(value: Any, positions: dict[int, int]) -> int:
    if id(value) in positions:
        return positions[id(value)]
    raise CaptureError(f"a graph input ({type(value).__name__}) is no parameter, buffer or input")


def _baked_constants(inputs: list[Any], kept: set[int]) -> tuple[tuple[int, Any], ...]:
    """Non-tensor inputs Dynamo made constants, where a literal can check them at run time."""
    import torch

    return tuple(
        (index, value)
        for index, value in enumerate(inputs)
        if index not in kept and not isinstance(value, torch.Tensor) and _is_literal(value)
    )


def _is_literal(value: Any) -> bool:
    try:
        return bool(ast.literal_eval(repr(value)) == value)
    except (ValueError, SyntaxError, TypeError):
        return False


def _example_inputs(module: Any, device: str, dtype: Any) -> list[Any]:
    """Real inputs (seeded) on the CPU; uninitialised ones on a GPU, where nothing will run."""
    import torch

    if device == "cpu":
        return reference.make_inputs(module, 0, device, dtype)
    from kernelevolve.eval.precompile import placeholder_inputs

    with torch.no_grad():
        return placeholder_inputs(module, device, dtype)


def _find_captured(exc: BaseException) -> _Captured | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, _Captured):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


@contextlib.contextmanager
def _stop_after_codegen(
    device: str, layout_optimization: bool = True, config_patches: Mapping[str, Any] | None = None
) -> Iterator[None]:
    import torch._inductor.config as inductor_config
    from torch._inductor import graph

    codegen = graph.GraphLowering.codegen

    def capture_then_stop(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = codegen(self, *args, **kwargs)
        value = result[0] if isinstance(result, tuple) else result
        raise _Captured(str(getattr(value, "value", value)), _attention_head_dim(self.module))

    patches: dict[str, Any] = {
        "compile_threads": 1,
        "fallback_random": True,
        "layout_optimization": layout_optimization,
        **(config_patches or {}),
    }
    with contextlib.ExitStack() as stack:
        if device == "cpu":
            patches["cpu_backend"] = "triton"
            stack.enter_context(_no_triton_driver_needed())
        stack.enter_context(inductor_config.patch(patches))
        graph.GraphLowering.codegen = capture_then_stop  # type: ignore[method-assign]
        try:
            yield
        finally:
            graph.GraphLowering.codegen = codegen  # type: ignore[method-assign]


def _attention_head_dim(graph_module: Any) -> int:
    """The largest query or value head size of the fused attention ops in the graph Inductor lowers
    (0: none): our attention kernel (own_attention.py) takes up to MAX_HEAD_DIM. Read from the graph,
    since the generated code names the op's inputs but not always their sizes."""
    from kernelevolve.variation.compiler.own_attention import ATTENTION_OPS

    sizes = [0]
    for node in graph_module.graph.nodes:
        if node.op == "call_function" and f"torch.ops.{node.target}" in ATTENTION_OPS:
            query, value = (getattr(node.args[i], "meta", {}).get("val") for i in (0, 2))
            sizes += [int(t.shape[-1]) for t in (query, value) if t is not None]
    return max(sizes)


def _attention_backend(as_matmuls: bool) -> contextlib.AbstractContextManager[Any]:
    """With `as_matmuls`, scaled_dot_product_attention traced as PyTorch's math backend writes it (AOT
    dispatch picks the backend while tracing): q and k scaled by sqrt(scale) each, bmm, softmax, bmm."""
    if not as_matmuls:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(SDPBackend.MATH)


@contextlib.contextmanager
def _warnings_outside_the_graph() -> Iterator[None]:
    """A reference that warns (InstanceNorm on a channel count other than its own) traces whole: Dynamo
    moves the warning out of the graph instead of breaking it there."""
    import warnings

    import torch._dynamo.config as dynamo_config

    functions = set(dynamo_config.reorderable_logging_functions) | {warnings.warn}
    with dynamo_config.patch(reorderable_logging_functions=functions):
        yield


@contextlib.contextmanager
def _no_triton_driver_needed() -> Iterator[None]:
    """Inductor hashes the active Triton backend into kernel metadata; a CPU has no Triton driver."""
    import torch.utils._triton as torch_triton

    original = torch_triton.triton_hash_with_backend
    torch_triton.triton_hash_with_backend = lambda: "0" * 64  # type: ignore[assignment]
    try:
        yield
    finally:
        torch_triton.triton_hash_with_backend = original
