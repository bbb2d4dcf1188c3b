"""Build a KernelBench-style reference and capture its forward as an aten-level FX graph.

Tracing is symbolic (``make_fx(tracing_mode="symbolic")`` with duck sizing off) so that a size the
program reads (``x.size(0)`` in a ``batchmean`` loss, the count of a variance) stays a
``sym_size`` node the emitter can turn into ``x.shape[0]`` at run time, instead of a number baked
in at the traced shape. Inputs and parameters live on the meta device: tracing a KernelBench
problem at its real size must not allocate its tensors.

The decomposition table is the core ATen one plus our own count-free rules for the normalisations
(layer/batch/instance norm, variance), written with ``aten.mean`` as a primitive: a decomposition
that divides by ``128.0`` would be wrong at every other shape.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kernelevolve.types import KernelSpec, ShapeCase


class TraceError(Exception):
    """The reference cannot be captured as a graph we can compile (the reason is the message)."""


@dataclass(frozen=True)
class ArgInfo:
    """One graph placeholder and where ModelNew.forward finds it."""

    name: str  # identifier used in the kernel signature
    source: str  # Python expression inside ModelNew.forward: "x" or "self.ln.weight"
    kind: str  # "tensor" or "float" (a Python float forward argument, passed as a kernel scalar)
    shape: tuple[int, ...]  # at the traced shape
    dtype: str  # torch dtype name without the "torch." prefix


@dataclass(frozen=True)
class TracedProgram:
    graph: Any  # torch.fx.GraphModule whose placeholders follow `args`
    args: tuple[ArgInfo, ...]
    forward_params: tuple[str, ...]  # names of Model.forward's parameters, in order
    shapes: dict[str, tuple[int, ...]]  # node name -> concrete shape at the traced shape (tensors only)
    dtypes: dict[str, str]  # node name -> dtype name (tensors only)
    symbolic: bool  # False when symbolic tracing failed and sizes may be baked in


def load_reference(spec: KernelSpec, shape: ShapeCase | None = None) -> types.ModuleType:
    """The reference as a fresh module, its size constants rebound to the shape case's values."""
    from kernelevolve.specs.reference_module import load_reference_module

    try:
        return load_reference_module(spec.reference_source, shape.params if shape is not None else None)
    except Exception as exc:  # the user's source: a reason, not a crash
        raise TraceError(f"loading the reference failed: {type(exc).__name__}: {exc}") from exc


def build_reference(module: types.ModuleType, device: str = "cpu", seed: int = 0) -> tuple[Any, list[Any]]:
    """Model(*get_init_inputs()) after manual_seed(seed), plus get_inputs(), on `device`."""
    import torch

    with torch.device(device):
        torch.manual_seed(seed)
        model = module.Model(*module.get_init_inputs())
        inputs = list(module.get_inputs())
    return model, inputs


def _attribute(path: str) -> str:
    """`self` expression for a named parameter: "layers.0.weight" -> "self.layers[0].weight"."""
    out = "self"
    for part in path.split("."):
        out += f"[{part}]" if part.isdigit() else f".{part}" if part.isidentifier() else f"[{part!r}]"
    return out


def _py_ident(text: str) -> str:
    out = "".join(ch if ch.isalnum() else "_" for ch in text)
    return out if out and not out[0].isdigit() else f"_{out}"


def _decompositions() -> dict[Any, Any]:
    import torch
    from torch._decomp import core_aten_decompositions, get_decompositions

    aten = torch.ops.aten
    table: dict[Any, Any] = dict(core_aten_decompositions())
    # Count-free upstream rules (no sizes baked in); checked by tests at two shapes.
    table.update(
        get_decompositions(
            [
                aten._softmax,
                aten._log_softmax,
                aten.logsumexp,
                aten.gelu,
                aten.elu,
                aten.hardsigmoid,
                aten.hardswish,
                aten.hardtanh,
                aten.leaky_relu,
                aten.softplus,
                aten.silu,
                aten.mish,
                aten.linalg_vector_norm,
                aten.smooth_l1_loss,
                aten.huber_loss,
                aten.mse_loss,
                aten.l1_loss,
                aten.soft_margin_loss,
                aten.binary_cross_entropy,
                aten.logit,
                aten.addcmul,
                aten.addcdiv,
                aten.lerp,
            ]
        )
    )
    for op in (aten.var.correction, aten.var_mean.correction, aten.std.correction, aten.std_mean.correction):
        table.pop(op, None)

    def moments(x: Any, dims: list[int], correction: float, keepdim: bool) -> tuple[Any, Any]:
        mean = aten.mean.dim(x, dims, True)
        centred = x - mean
        if correction == 0:
            var = aten.mean.dim(centred * centred, dims, keepdim)
        else:
            count = 1
            for d in dims:
                count = count * x.shape[d]
            var = aten.sum.dim_IntList(centred * centred, dims, keepdim) / (count - correction)
        return var, mean if keepdim else aten.squeeze.dims(mean, dims)

    def norm_dims(x: Any, dim: Any) -> list[int]:
        if dim is None:
            return list(range(x.dim()))
        dims = [dim] if isinstance(dim, int) else list(dim)
        return [d % x.dim() for d in dims] if dims else list(range(x.dim()))

    def var(x: Any, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Any:
        c = 1 if correction is None else correction
        return moments(x, norm_dims(x, dim), c, keepdim)[0]

    def var_mean(x: Any, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Any:
        c = 1 if correction is None else correction
        return moments(x, norm_dims(x, dim), c, keepdim)

    def std(x: Any, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Any:
        return aten.sqrt(var(x, dim, correction=correction, keepdim=keepdim))

    def std_mean(x: Any, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Any:
        v, m = var_mean(x, dim, correction=correction, keepdim=keepdim)
        return aten.sqrt(v), m

    def layer_norm(x: Any, normalized_shape: Any, weight: Any, bias: Any, eps: float) -> Any:
        dims = list(range(x.dim() - len(normalized_shape), x.dim()))
        v, mean = moments(x, dims, 0, True)
        rstd = aten.rsqrt(v + eps)
        out = (x - mean) * rstd
        if weight is not None:
            out = out * weight
        if bias is not None:
            out = out + bias
        return out, mean, rstd

    def batch_norm_stats(x: Any, weight: Any, bias: Any, eps: float) -> tuple[Any, Any, Any]:
        dims = [0, *range(2, x.dim())]
        v, mean = moments(x, dims, 0, True)
        rstd = aten.rsqrt(v + eps)
        out = (x - mean) * rstd
        shape = [1, -1] + [1] * (x.dim() - 2)
        if weight is not None:
            out = out * aten.view(weight, shape)
        if bias is not None:
            out = out + aten.view(bias, shape)
        return out, aten.squeeze.dims(mean, dims), aten.squeeze.dims(rstd, dims)

    def batch_norm_no_stats(
        x: Any, weight: Any, bias: Any, training: bool, momentum: float, eps: float
    ) -> Any:
        return batch_norm_stats(x, weight, bias, eps)

    table[aten.var.correction] = var
    table[aten.var_mean.correction] = var_mean
    table[aten.std.correction] = std
    table[aten.std_mean.correction] = std_mean
    table[aten.native_layer_norm.default] = layer_norm
    table[aten._native_batch_norm_legit.no_stats] = batch_norm_no_stats
    return table


def _reject_heavy_modules(model: Any) -> None:
    """Fail fast on modules no fused pointwise/reduction kernel covers: tracing a whole network
    (KernelBench level 3) symbolically takes minutes, and its first convolution would end it anyway."""
    from torch import nn
    from torch.nn.modules import conv, pooling, rnn

    heavy = (
        conv._ConvNd,
        nn.Linear,
        nn.Bilinear,
        rnn.RNNBase,
        nn.MultiheadAttention,
        nn.Embedding,
        nn.EmbeddingBag,
        pooling._MaxPoolNd,
        pooling._AvgPoolNd,
        pooling._AdaptiveAvgPoolNd,
        pooling._AdaptiveMaxPoolNd,
        nn.TransformerEncoderLayer,
        nn.TransformerDecoderLayer,
    )
    for name, module in model.named_modules():
        if isinstance(module, heavy):
            raise TraceError(
                f"self.{name} is a {type(module).__name__}: convolutions, matmuls, recurrences, "
                "attention, embeddings and pooling are out of scope"
            )


@contextlib.contextmanager
def _quiet_torch() -> Iterator[None]:
    """A failed symbolic attempt makes torch log whole tracebacks; the fallback handles it."""
    loggers = [
        logging.getLogger(n)
        for n in ("torch._subclasses.fake_tensor", "torch.fx.experimental.symbolic_shapes")
    ]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _forward_params(model: Any) -> tuple[str, ...]:
    sig = inspect.signature(model.forward)
    names = []
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TraceError(
                f"forward parameter {p.name!r} is {p.kind.description}; only plain ones are supported"
            )
        names.append(p.name)
    return tuple(names)


def trace_spec(spec: KernelSpec, shape: ShapeCase | None = None) -> TracedProgram:
    """Trace `spec` at `shape` (default: its first shape case). Raises TraceError with a reason."""
    import torch
    import torch.fx.experimental._config as fx_config
    from torch.fx.experimental.proxy_tensor import make_fx

    module = load_reference(spec, shape if shape is not None else spec.shapes[0])
    try:
        model, inputs = build_reference(module, device="meta")
    except Exception as exc:  # the reference's own code failed: a reason, not a crash
        raise TraceError(f"building the reference failed: {type(exc).__name__}: {exc}") from exc
    _reject_heavy_modules(model)
    forward_params = _forward_params(model)
    if len(inputs) != len(forward_params):
        raise TraceError(
            f"get_inputs() gives {len(inputs)} values for {len(forward_params)} forward parameters"
        )

    state: list[tuple[str, Any]] = list(model.named_parameters()) + list(model.named_buffers())
    args: list[ArgInfo] = []
    example: list[Any] = []
    for path, tensor in state:
        args.append(
            ArgInfo(_py_ident("p_" + path), _attribute(path), "tensor", tuple(tensor.shape), _dtype(tensor))
        )
        example.append(tensor)
    for pname, value in zip(forward_params, inputs, strict=True):
        if isinstance(value, torch.Tensor):
            args.append(ArgInfo(_py_ident(pname), pname, "tensor", tuple(value.shape), _dtype(value)))
            example.append(value)
        elif isinstance(value, float):
            args.append(ArgInfo(_py_ident(pname), pname, "float", (), "float32"))
            example.append(torch.tensor(value, device="meta"))
        else:
            raise TraceError(
                f"forward argument {pname!r} is a {type(value).__name__}; only tensors and floats"
            )
    n_state = len(state)
    names = [p for p, _ in state]

    def run(*flat: Any) -> Any:
        return torch.func.functional_call(
            model, dict(zip(names, flat[:n_state], strict=True)), tuple(flat[n_state:])
        )

    table = _decompositions()
    symbolic = True
    with _quiet_torch():
        try:
            with fx_config.patch(use_duck_shape=False):  # type: ignore[attr-defined]
                gm = make_fx(run, decomposition_table=table, tracing_mode="symbolic")(*example)
        except Exception:
            symbolic = False
            try:
                gm = make_fx(run, decomposition_table=table, tracing_mode="fake")(*example)
            except Exception as exc:
                raise TraceError(f"tracing failed: {type(exc).__name__}: {str(exc)[:300]}") from exc
    shapes, dtypes = _propagate(gm, example)
    return TracedProgram(gm, tuple(args), forward_params, shapes, dtypes, symbolic)


def _dtype(tensor: Any) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _propagate(gm: Any, example: list[Any]) -> tuple[dict[str, tuple[int, ...]], dict[str, str]]:
    """Concrete shapes of every node at the traced shape (on meta tensors: no memory)."""
    import torch

    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, str] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            result = super().run_node(n)
            if isinstance(result, torch.Tensor):
                shapes[n.name] = tuple(int(s) for s in result.shape)
                dtypes[n.name] = _dtype(result)
            return result

    try:
        Recorder(gm).run(*example)
    except Exception as exc:
        raise TraceError(
            f"the traced graph does not run on meta tensors: {type(exc).__name__}: {exc}"
        ) from exc
    return shapes, dtypes
