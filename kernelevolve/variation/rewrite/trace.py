"""The reference at one shape as an FX graph of torch calls, with every node's shape recorded.

`torch.fx.symbolic_trace` keeps modules (nn.Linear, nn.ConvTranspose2d, ...) as single calls, which is
the level the rules match at, and its generated code is plain torch the reference's module can run.
The model and inputs are built on the meta device: no parameter or input of a full-size problem is
allocated, and shapes come from running the graph on meta tensors. The model is traced in eval mode, as the
harness runs it, so dropout is the identity and batch norm uses its running statistics.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class RewriteError(Exception):
    """The reference cannot be traced or its rewrite cannot be written back (the reason is the message)."""


@dataclass(frozen=True)
class Traced:
    graph_module: Any  # torch.fx.GraphModule of Model(*get_init_inputs()) on meta, in the spec's mode
    inputs: tuple[Any, ...]  # get_inputs() on meta, to propagate shapes again after a rewrite
    namespace: types.ModuleType  # the reference module: names the generated forward may use


def trace_reference(
    source: str, shape_params: Mapping[str, Any] | None = None, mode: str = "as_built"
) -> Traced:
    """Trace `Model.forward` of the reference in `mode` (the spec's), its size constants set to
    `shape_params`."""
    import torch
    import torch.fx as fx

    from kernelevolve.specs.reference import apply_mode
    from kernelevolve.specs.reference_module import load_reference_module

    try:
        module = load_reference_module(source, shape_params)
        with torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = module.Model(*module.get_init_inputs())
            inputs = tuple(module.get_inputs())
            apply_mode(model, mode)
            graph_module = fx.symbolic_trace(model)
    except Exception as exc:  # the reference's own code, or FX refusing it: a reason, not a crash
        raise RewriteError(f"tracing the reference failed: {type(exc).__name__}: {str(exc)[:300]}") from exc
    traced = Traced(graph_module, inputs, module)
    propagate_shapes(traced)
    return traced


def propagate_shapes(traced: Traced) -> None:
    """Record every tensor-valued node's shape (node.meta["tensor_meta"]) by running the graph on meta
    tensors (torch's ShapeProp would do, but prints a traceback for a reference it cannot run)."""
    import torch
    import torch.fx as fx

    class Shapes(fx.Interpreter):
        def run_node(self, node: fx.Node) -> Any:
            result = super().run_node(node)
            node.meta.pop("tensor_meta", None)
            if isinstance(result, torch.Tensor):
                node.meta["tensor_meta"] = TensorShape(tuple(result.shape), result.dtype)
            return result

    try:
        with torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Shapes(traced.graph_module).run(*traced.inputs)
    except Exception as exc:
        raise RewriteError(f"shape propagation failed: {type(exc).__name__}: {str(exc)[:300]}") from exc


@dataclass(frozen=True)
class TensorShape:
    shape: tuple[int, ...]
    dtype: Any
