"""The context the engine gives a seed operator, for tests of arity-0 operators."""

from __future__ import annotations

import random

from kernelevolve.graph import SearchGraph
from kernelevolve.interfaces import ProposalContext
from kernelevolve.platforms import Platform
from kernelevolve.types import KernelSpec


def seed_context(spec: KernelSpec, platform: Platform) -> ProposalContext:
    """The spec, an empty graph, Triton allowed."""
    return ProposalContext(
        spec=spec,
        platform=platform,
        graph=SearchGraph(),
        parents=(),
        rng=random.Random(0),
        backends=("triton",),
    )
