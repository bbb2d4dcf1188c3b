"""The template operator: seeds the search with the library's hand-written kernels for the spec."""

from __future__ import annotations

import logging
from typing import Any

from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.types import Candidate
from kernelevolve.variation.template_library import Template, templates_for, tunable_values
from kernelevolve.variation.tunables import apply_values

log = logging.getLogger(__name__)

PRECISION_TUNABLE = "FP32_PRECISION"  # the fp32 dot precision of the GEMM-shaped templates


class TemplateOperator:
    """Arity 0: every template serving the spec (`templates_for`), for every allowed backend, becomes a seed.

    Templates already in the graph are not proposed again, so a second call returns [] once
    every seed is in (the engine reads that as "this operator has nothing new").
    """

    name = "template"
    arity = 0

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        proposals: list[Candidate] = []
        for backend in ctx.backends:
            for template in templates_for(ctx.spec, backend):
                for source, extra in _with_precision_twins(template, ctx.platform.device):
                    candidate = Candidate(
                        source=source,
                        backend=backend,
                        operator=self.name,
                        mode="seed",
                        metadata={
                            "template": template.name,
                            "family": template.family,
                            "params": tunable_values(source),
                            **extra,
                        },
                    )
                    if candidate.id not in ctx.graph and all(c.id != candidate.id for c in proposals):
                        proposals.append(candidate)
        log.debug("template operator: %d seed(s) for spec %s", len(proposals), ctx.spec.name)
        return proposals


def _with_precision_twins(template: Template, device: str) -> list[tuple[str, dict[str, Any]]]:
    """The template's source, then on GPU platforms one twin per `seed_precisions` value its FP32_PRECISION
    tunable offers. A search of a dozen evaluations rarely reaches that one tunable among ten by mutation:
    on the H200, KernelBench L1/97's attention ran 13 evaluations at tf32x3 and never tried one TF32 pass,
    which puts its error at about a quarter of the tolerance. (The CPU's interpreter computes fp32 dots
    exactly whatever the precision: twins there would time the same kernel again.)"""
    sources: list[tuple[str, dict[str, Any]]] = [(template.source, {})]
    if device == "cpu":
        return sources
    choices = template.tunables.get(PRECISION_TUNABLE, ())
    own = template.params.get(PRECISION_TUNABLE)
    for precision in template.seed_precisions:
        if precision in choices and precision != own:
            twin = apply_values(template.source, {PRECISION_TUNABLE: precision})
            sources.append((twin, {"fp32_precision": precision}))
    return sources
