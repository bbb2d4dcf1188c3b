"""The typed seams between the engine and its pluggable parts.

Each part is chosen by name from config through `kernelevolve.registry`; these protocols are what
the engine relies on and nothing more.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from kernelevolve.types import Baseline, Candidate, EvalReport, EvalRequest, FitnessValue, KernelSpec

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform
    from kernelevolve.search.graph import SearchGraph

# A parent set: ids of graph nodes a child is made from. Empty means "make from the spec alone".
ParentSet = tuple[str, ...]


@dataclass(frozen=True)
class ProposalContext:
    """What an operator may look at when it proposes children."""

    spec: KernelSpec
    platform: Platform
    graph: SearchGraph
    parents: ParentSet
    rng: random.Random
    backends: tuple[str, ...]  # backends allowed by the spec and runnable on the platform
    budget_hint: int = 1  # how many children the engine would like from this call


@runtime_checkable
class Operator(Protocol):
    """Makes child candidates. `arity` 0 operators seed from the spec; 1 and 2 need parents."""

    name: str
    arity: int

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        """Return new candidates (possibly none). Must not raise for bad parent code."""
        ...


@runtime_checkable
class FollowsUp(Protocol):
    """An operator with work that should not wait for the scheduler's turn or the policy's choice of
    parents: the engine asks it first, once per parent set it names."""

    def follow_up(self, graph: SearchGraph) -> ParentSet | None:
        """The parents to propose from now, or None."""
        ...


@runtime_checkable
class Prepares(Protocol):
    """An operator that reads the graph and then waits on something slow (an LLM call): the engine calls
    `prepare` in its own thread, so the proposal is made from the graph as it was when the job was handed
    out (not as reports recorded meanwhile left it), and runs the returned callable in its pool."""

    def prepare(self, ctx: ProposalContext) -> Callable[[], list[Candidate]]:
        """The slow part of `propose(ctx)`, with everything it reads from the graph read now."""
        ...


@runtime_checkable
class Rests(Protocol):
    """An operator that can tell when asking it again at once would be wasted (its recent proposals
    gave nothing usable, its budget is spent): the dispatch then lets it sit out a while."""

    def rest_reason(self) -> str | None:
        """Why it should rest now, or None."""
        ...


@runtime_checkable
class SelectionPolicy(Protocol):
    """Chooses which nodes to expand next."""

    name: str

    def select(self, graph: SearchGraph, rng: random.Random, count: int, arity: int) -> list[ParentSet]:
        """Up to `count` parent sets of `arity` evaluated nodes each."""
        ...

    def observe(self, graph: SearchGraph, node_id: str) -> None:
        """Called once a node has its report and fitness (for statistics such as UCT)."""
        ...


@dataclass(frozen=True)
class SearchState:
    """What termination rules see."""

    evaluations: int
    elapsed_s: float
    best: FitnessValue | None
    evaluations_since_improvement: int
    proposals_exhausted: bool = False
    llm_cost_usd: float = 0.0  # the run's LLM totals, every session included
    llm_calls: int = 0
    llm_tokens: int = 0


@runtime_checkable
class TerminationRule(Protocol):
    name: str

    def check(self, state: SearchState) -> tuple[bool, str]:
        """(stop, reason). The reason is shown to the user and stored in results.json."""
        ...


@runtime_checkable
class Evaluator(Protocol):
    """Runs the harness somewhere (local child processes, Ray actors) and hands back reports."""

    @property
    def capacity(self) -> int:
        """How many requests may usefully be in flight at once."""
        ...

    def submit(self, request: EvalRequest) -> Future[EvalReport]:
        """Queue one evaluation. The future never raises for candidate faults: they are reports."""
        ...

    def baselines(self, spec: KernelSpec, platform: str) -> dict[str, Baseline]:
        """Eager and torch.compile timings per shape, measured by the same harness (cached)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Proposal:
    """A candidate on its way to the evaluator, with where it came from."""

    candidate: Candidate
    reasons: Sequence[str] = field(default_factory=tuple)
