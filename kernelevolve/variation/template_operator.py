"""The template operator: seeds the search with the library's hand-written kernels for the spec."""

from __future__ import annotations

import logging

from kernelevolve.interfaces import ProposalContext
from kernelevolve.types import Candidate
from kernelevolve.variation.template_library import templates_for, tunable_values

log = logging.getLogger(__name__)


class TemplateOperator:
    """Arity 0: every template matching the spec's tags, for every allowed backend, becomes a seed.

    Templates already in the graph are not proposed again, so a second call returns [] once
    every seed is in (the engine reads that as "this operator has nothing new").
    """

    name = "template"
    arity = 0

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        proposals: list[Candidate] = []
        for backend in ctx.backends:
            for template in templates_for(ctx.spec, backend):
                candidate = Candidate(
                    source=template.source,
                    backend=backend,
                    operator=self.name,
                    mode="seed",
                    metadata={
                        "template": template.name,
                        "family": template.family,
                        "params": tunable_values(template.source),
                    },
                )
                if candidate.id not in ctx.graph and all(c.id != candidate.id for c in proposals):
                    proposals.append(candidate)
        log.debug("template operator: %d seed(s) for spec %s", len(proposals), ctx.spec.name)
        return proposals
