"""The context the engine gives an operator, for tests of seed (arity-0) and one-parent operators."""

from __future__ import annotations

import random

from kernelevolve.platforms import Platform
from kernelevolve.search.graph import SearchGraph
from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.types import Candidate, KernelSpec


def seed_context(spec: KernelSpec, platform: Platform, graph: SearchGraph | None = None) -> ProposalContext:
    """The spec, an empty graph (or `graph`, e.g. one holding the baselines event), Triton allowed."""
    return ProposalContext(
        spec=spec,
        platform=platform,
        graph=graph if graph is not None else SearchGraph(),
        parents=(),
        rng=random.Random(0),
        backends=("triton",),
    )


def parent_context(
    spec: KernelSpec,
    platform: Platform,
    graph: SearchGraph,
    parent: Candidate,
    budget_hint: int = 1,
    seed: int = 0,
) -> ProposalContext:
    """The context of a one-parent proposal: `parent` (in `graph`), Triton allowed."""
    return ProposalContext(spec, platform, graph, (parent.id,), random.Random(seed), ("triton",), budget_hint)
