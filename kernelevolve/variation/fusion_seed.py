"""The fusion-seed operator: Triton seeds compiled from the reference itself, with no model.

Arity 0. The spec's reference is traced once (cached by spec key); each supported program yields
1-3 candidates, one per kernel strategy (e.g. whole row in registers vs a loop over the row).
Unsupported programs (a matmul, a convolution...) give no candidates and an INFO log line saying why.
"""

from __future__ import annotations

import logging

from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.specs.tracing import TRACING_LOCK
from kernelevolve.types import Candidate
from kernelevolve.variation.codegen import Generation, generate

log = logging.getLogger(__name__)

BACKEND = "triton"


class FusionSeedOperator:
    name = "fusion_seed"
    arity = 0

    def __init__(self, max_variants: int = 3) -> None:
        if max_variants < 1:
            raise ValueError(f"max_variants must be at least 1, got {max_variants}")
        self.max_variants = max_variants
        self._cache: dict[str, Generation] = {}

    def generation(self, ctx: ProposalContext) -> Generation:
        key = ctx.spec.key
        if key not in self._cache:
            with TRACING_LOCK:
                self._cache[key] = generate(ctx.spec, max_variants=self.max_variants)
        return self._cache[key]

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if BACKEND not in ctx.backends:
            log.info("fusion_seed: backend %s not allowed for %s; no seeds", BACKEND, ctx.spec.name)
            return []
        gen = self.generation(ctx)
        if not gen.supported:
            log.info("fusion_seed: %s is not supported: %s", ctx.spec.name, gen.reason)
            return []
        proposals: list[Candidate] = []
        for variant in gen.variants:
            candidate = Candidate(
                source=variant.source,
                backend=BACKEND,
                operator=self.name,
                mode="seed",
                metadata={
                    "pattern": gen.pattern,
                    "strategy": variant.strategy,
                    "params": dict(variant.params),
                    "program": gen.description,
                    "symbolic_sizes": gen.symbolic,
                },
            )
            if candidate.id not in ctx.graph and all(c.id != candidate.id for c in proposals):
                proposals.append(candidate)
        log.info("fusion_seed: %d seed(s) for %s (%s)", len(proposals), ctx.spec.name, gen.description)
        return proposals
