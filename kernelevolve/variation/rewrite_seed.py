"""The rewrite-seed operator: the reference made to do less work, then compiled as compiler seeds are.

Arity 0, no model. At every benchmark shape the reference is traced and exact work-reducing rewrites
are applied (`variation/rewrite/`: a sum over a GEMM's output features becomes a matrix-vector
product, a global spatial mean after a convolution becomes window sums of its input, reductions over
size-1 dimensions and `a - a` go). The rewritten reference keeps the reference's `__init__`, so
parameters match; Inductor's Triton for it is captured shape by shape and rendered as one standalone
candidate exactly as `compiler_seed` does (a seed keeping library calls for permissive mode and, where
they are matmuls or convolutions, one with our own Triton kernels for strict mode). Rewrites are
exact up to float rounding; the harness checks the candidate like any other. Where no rule applies
the operator proposes nothing and logs why.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.specs.tracing import TRACING_LOCK
from kernelevolve.types import Candidate
from kernelevolve.variation.compiler.capture import CaptureSettings
from kernelevolve.variation.compiler_seed import CompilerSeedOperator, capture_device, capture_programs
from kernelevolve.variation.rewrite.pipeline import RULES, Rewritten

log = logging.getLogger(__name__)

# `a - a` -> 0 is exact only where `a` is finite (an inf or NaN gives NaN in the reference), and on a
# degenerate reference (KernelBench L2/80) it turns the whole problem into a zero fill: a speedup
# that says more about the benchmark than about kernels. Opt in with `rules: [..., self_difference]`.
DEFAULT_RULES = tuple(rule for rule in RULES if rule != "self_difference")


class RewriteSeedOperator(CompilerSeedOperator):
    name = "rewrite_seed"
    arity = 0

    def __init__(self, rules: Sequence[str] = DEFAULT_RULES, strict: bool = False) -> None:
        super().__init__(strict)
        unknown = [r for r in rules if r not in RULES]
        if unknown:
            raise ValueError(f"unknown rewrite rule(s) {unknown}; valid: {', '.join(RULES)}")
        self.rules = tuple(rules)

    def _generate(self, ctx: ProposalContext) -> list[Candidate]:
        rewrites = self._rewrites(ctx)
        if rewrites is None:
            return []
        fired = [f for r in rewrites for f in r.fired]
        extra: dict[str, Any] = {
            "rewrites": list(dict.fromkeys(f.rule for f in fired)),
            "rewritten": list(dict.fromkeys(f.description for f in fired)),
        }
        device = capture_device(ctx)
        seeds = self._seeds_of_each_capture(
            ctx, device, lambda settings: _programs(ctx, rewrites, device, settings), extra
        )
        if seeds is None:
            return []
        log.info(
            "rewrite_seed: %d seed(s) for %s: %s", len(seeds), ctx.spec.name, "; ".join(extra["rewritten"])
        )
        return seeds

    def _rewrites(self, ctx: ProposalContext) -> list[Rewritten] | None:
        """The rewritten reference at each shape, or None (logged) where no rule applies at any."""
        from kernelevolve.variation.rewrite.pipeline import rewrite_reference

        rewrites = []
        for shape in ctx.spec.shapes:
            try:
                with TRACING_LOCK:
                    rewritten = rewrite_reference(
                        ctx.spec.reference_source, shape.params, self.rules, ctx.spec.mode
                    )
            except Exception as exc:  # a rule's bug must not stop the search
                log.warning("rewrite_seed: rewriting failed for %s: %s", ctx.spec.name, exc, exc_info=True)
                return None
            rewrites.append(rewritten)
        if not any(r.fired for r in rewrites):
            reasons = sorted({r.reason for r in rewrites})
            log.info("rewrite_seed: no seed for %s: %s", ctx.spec.name, "; ".join(reasons))
            return None
        return rewrites


def _programs(
    ctx: ProposalContext, rewrites: list[Rewritten], device: str, settings: CaptureSettings
) -> list[Any] | None:
    """Inductor's program for each shape's rewritten reference (the reference itself where no rule
    applies at that shape), or None (logged by the capture) where one cannot be had."""
    programs: list[Any] = []
    for shape, rewritten in zip(ctx.spec.shapes, rewrites, strict=True):
        source = rewritten.source or ctx.spec.reference_source
        spec = dataclasses.replace(ctx.spec, reference_source=source, shapes=(shape,))
        captured = capture_programs(dataclasses.replace(ctx, spec=spec), device, settings)
        if captured is None:
            return None
        programs += captured
    return programs
