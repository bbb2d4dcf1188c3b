"""Fusion codegen: compile a pointwise / single-axis-reduction PyTorch reference into Triton, no model.

Pipeline: `trace` (symbolic aten graph of the reference, on meta tensors) -> `ir.classify`
(`lower`/`lower_ops` bind dimensions to iteration axes and map ops, `finish` picks the pattern) ->
`emit` (complete candidate sources, one per kernel strategy: `kernels` for pointwise and split
reductions, `row_kernels` for row reductions, `tl_expr` for the math). `generate` runs it end to
end and never raises for an unsupported or odd reference: the answer then carries the reason.

Strategies: pointwise ``flat`` / ``grid_stride``; row reductions ``persistent`` (row in registers,
looped fallback), ``online`` (softmax-style exp-sums folded into the max pass) and ``looped``;
full reductions ``split`` (per-program partials, then a finish kernel).

Supported KernelBench level 1 (checked at two shapes by tests/test_codegen.py): 5, 12, 19-32, 34,
36-40, 47-49, 53, 88, 94, 96, 98, 100. Not supported: matmul/conv/pooling (1-18 except 5/12,
41-46, 50, 54-87), BatchNorm in training mode (33: reduces over N, H, W and updates running
stats), GroupNorm (35: its view splits the channel axis), argmax/argmin (51, 52), scans (89-93),
cross-entropy (95: gather), attention (97), triplet margin (99: two reduction axes). Level 2
problems all start with a matmul or convolution and are not supported as whole programs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kernelevolve.types import KernelSpec, ShapeCase

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Variant:
    strategy: str
    source: str
    params: dict[str, int]


@dataclass(frozen=True)
class Generation:
    """What fusion codegen made of a spec: variants (best first) or the reason there are none."""

    pattern: str = ""  # pointwise | row_reduction | full_reduction ("" when unsupported)
    variants: tuple[Variant, ...] = ()
    reason: str = ""
    description: str = ""
    symbolic: bool = True  # False: sizes may be baked in at the traced shape

    @property
    def supported(self) -> bool:
        return bool(self.variants)


def generate(spec: KernelSpec, shape: ShapeCase | None = None, max_variants: int = 3) -> Generation:
    """Trace `spec` (at `shape`, default its first shape case) and emit up to `max_variants` sources."""
    from kernelevolve.variation.codegen.emit import EmitError, emit, strategies
    from kernelevolve.variation.codegen.ir import Unsupported, classify
    from kernelevolve.variation.codegen.trace import TraceError, trace_spec

    try:
        traced = trace_spec(spec, shape)
        program = classify(traced)
        if isinstance(program, Unsupported):
            return Generation(reason=program.reason)
        variants = []
        for strategy in strategies(program)[:max_variants]:
            emitted = emit(program, spec.reference_source, strategy, title=f" for {spec.name}")
            variants.append(Variant(strategy, emitted.source, emitted.params))
    except (TraceError, EmitError) as exc:
        return Generation(reason=str(exc))
    except Exception as exc:  # a bug here must not stop a search: report it as a reason
        log.warning("fusion codegen failed on %s", spec.name, exc_info=True)
        return Generation(reason=f"internal error: {type(exc).__name__}: {exc}")
    return Generation(program.pattern, tuple(variants), "", program.describe(), program.symbolic)


__all__ = ["Generation", "Variant", "generate"]
