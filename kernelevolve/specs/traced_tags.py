"""Coarse tags of what a reference computes (gemm, conv, normalization, ...), read from its traced program.

They are hints where a spec is compared with others or described in a query: the past-win store's tag bonus
and the knowledge-base queries of the LLM prompts. Templates are chosen by family (traced_families.py), not
by these. A reference's name and text say nothing here: "45_UNetSoftmax" is a network of convolutions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kernelevolve.specs.traced_families import TracedOp, TracedProgram, cached_program, spec_families
from kernelevolve.types import KernelSpec

_GEMM = ("mm", "addmm", "bmm", "baddbmm", "addbmm", "_scaled_mm", "addmv", "mv")
_NORMS = ("native_layer_norm", "native_batch_norm", "_native_batch_norm_legit", "native_group_norm",
          "_native_batch_norm_legit_no_training", "_batch_norm_with_update", "_fused_rms_norm",
          "linalg_vector_norm", "norm", "rms_norm", "instance_norm")  # fmt: skip
_SCANS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "_logcumsumexp")


def _base(op: TracedOp) -> str:
    return op.name.split(".")[0].rstrip("_")  # "add_.Scalar" -> "add"


def _any(names: tuple[str, ...]) -> Callable[[TracedProgram], bool]:
    return lambda program: any(_base(op) in names for op in program.ops)


def _output_reduced(program: TracedProgram) -> bool:
    """The forward's result comes out of a reduction (PyTorch's own op tag): a sum, mean, max, norm, arg..."""
    import torch

    source = program.output.split("[")[0]
    if not source.startswith("op"):
        return False
    name, overload = program.ops[int(source[2:])].name.split(".")
    op = getattr(getattr(torch.ops.aten, name, None), overload, None)
    return op is not None and torch.Tag.reduction in op.tags


def _loss(program: TracedProgram) -> bool:
    calls = [_base(op) for op in (*program.ops, *program.functions)]
    return any(
        "loss" in name or name in ("cross_entropy", "kl_div", "binary_cross_entropy") for name in calls
    )


def _attention(program: TracedProgram) -> bool:
    """An attention call, or attention written out: a softmax of a matmul's result feeding another matmul."""
    calls = [op.name for op in program.functions] + [_base(op) for op in program.ops]
    if any("scaled_dot_product" in name or name == "multi_head_attention_forward" for name in calls):
        return True
    after_product: set[int] = set()  # ops downstream of a matmul
    weighted: set[int] = set()  # ops downstream of a softmax downstream of a matmul
    for index, op in enumerate(program.ops):
        inputs = {int(s[2:].split("[")[0]) for s in op.sources if s.startswith("op")}
        if _base(op) in ("bmm", "mm") and inputs & weighted:
            return True
        if _base(op) in ("bmm", "mm") or inputs & after_product:
            after_product.add(index)
        if inputs & weighted or (_base(op) in ("_softmax", "_safe_softmax") and inputs & after_product):
            weighted.add(index)
    return False


def _global_pool(program: TracedProgram) -> bool:
    """A mean or max over every spatial dim of a (batch, channels, *spatial) tensor: a global pool."""
    for op in program.ops:
        if _base(op) not in ("mean", "amax", "sum") or len(op.sources) != 1:
            continue
        shape = _shape(program, op.sources[0])
        dims = op.arguments.get("dim")
        if shape is None or len(shape) not in (4, 5) or not isinstance(dims, list):
            continue
        if sorted(d % len(shape) for d in dims) == list(range(2, len(shape))) and _base(op) != "sum":
            return True
    return False


def _shape(program: TracedProgram, source: str) -> tuple[int, ...] | None:
    if source.startswith("in"):
        return program.input_shapes[int(source[2:])]
    if not source.startswith("op"):
        return None
    op = program.ops[int(source[2:].split("[")[0])]
    index = int(source.split("[")[1].rstrip("]")) if "[" in source else 0
    return op.shapes[index] if index < len(op.shapes) else None


RULES: dict[str, Callable[[TracedProgram], bool]] = {
    "gemm": _any(_GEMM),
    "conv": lambda program: any(
        _base(op).lstrip("_").startswith(("convolution", "conv")) for op in program.ops
    ),
    "normalization": _any(_NORMS),
    "pooling": lambda program: any("pool" in _base(op) for op in program.ops) or _global_pool(program),
    "reduction": _output_reduced,
    "attention": _attention,
    "loss": _loss,
    "scan": _any(_SCANS),
    "argreduce": _any(("argmax", "argmin")),
}


def traced_tags(code: str, params: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The coarse tags the reference's traced program earns (none where it cannot be traced)."""
    program = cached_program(code, params)
    return () if program is None else tuple(tag for tag, earns in RULES.items() if earns(program))


def program_tags(spec: KernelSpec) -> tuple[str, ...]:
    """The spec's own tags, then its traced families and coarse tags: what to describe it by in a query."""
    first = spec.shapes[0].params if spec.shapes else None
    found = [*spec.tags, *sorted(spec_families(spec)), *traced_tags(spec.reference_source, first)]
    return tuple(dict.fromkeys(found))
