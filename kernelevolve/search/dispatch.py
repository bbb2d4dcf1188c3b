"""What runs next: the one place that decides which candidate is evaluated and which operator proposes.

The engine asks two questions and reports two kinds of outcome; every rule that answers them is here:

  * `next_candidate()`: the waiting queue (`ReadyQueue`): operators' follow-ups first, then seeds
    interleaved across the operators that made them (each operator's own order kept), taking turns with
    children.
  * `next_job(waiting)`: an operator (the scheduler's bandit over improvement per cost, skipping operators
    whose last proposal gave nothing while a report that could change that is in flight, and operators
    resting: a `Rests` operator that said its recent proposals were wasted sits out 1, 2, 4... reports,
    with its reason in the log) and its parents
    (the selection policy; in a permissive run every STRICT_TURN-th one-parent job goes to the best
    own-kernel node instead, which the strict result reports and the policy would otherwise never tune).
  * `proposal_done(...)` and `evaluated(...)`: rewards for the bandit and the barren bookkeeping.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kernelevolve.search.graph import SearchGraph, best_strict
from kernelevolve.search.interfaces import FollowsUp, Operator, ParentSet, Rests, SelectionPolicy
from kernelevolve.search.ready_queue import ReadyQueue
from kernelevolve.types import Candidate, FitnessValue

BARREN_PROPOSAL_COST = 1e-3  # a proposal that gave nothing new: the floor cost of an evaluated child
STRICT_TURN = 3  # permissive runs: every third one-parent job tunes the best own-kernel node
MAX_REST_REPORTS = 16  # a resting operator sits out 1, 2, 4... reports, at most this many

log = logging.getLogger(__name__)


class Scheduler(Protocol):
    """Chooses the next operator (a bandit over improvement per cost)."""

    def choose(self, available: list[Operator], rng: random.Random) -> Operator: ...

    def update(self, operator_name: str, reward: float, cost: float) -> None: ...

    def to_json(self) -> dict[str, Any]: ...


def arities(operator: Operator) -> tuple[int, ...]:
    """Parent counts an operator accepts: its `arities` when it declares several, else its `arity`."""
    return tuple(getattr(operator, "arities", (operator.arity,)))


class Dispatch:
    def __init__(
        self,
        operators: Sequence[Operator],
        policy: SelectionPolicy,
        scheduler: Scheduler,
        graph: SearchGraph,
        rng: random.Random,
        strict: bool,
    ) -> None:
        self.operators = list(operators)
        self.policy = policy
        self.scheduler = scheduler
        self.graph = graph
        self.rng = rng
        self.strict = strict
        self.ready = ReadyQueue()
        self.barren_rounds = 0  # consecutive proposals that gave nothing new
        # Operators whose proposals gave nothing new since the last report: the next jobs go to the
        # others. Without this an operator that declines (graph replay on a parent that is not host-bound)
        # stays "untried" for the bandit, is chosen for every job and starves the rest.
        self._barren: set[str] = set()
        self._followed_up: set[tuple[str, ParentSet]] = set()  # follow-up jobs already handed out
        self._one_parent_jobs = 0
        self._reports = 0
        self._resting: dict[str, tuple[int, str]] = {}  # operator -> (report count it waits for, why)
        self._rests: dict[str, int] = {}  # operator -> rests in a row (the next one is twice as long)

    # ------------------------------------------------------------- queue
    def __len__(self) -> int:
        return len(self.ready)

    def next_candidate(self) -> Candidate | None:
        return self.ready.pop() if self.ready else None

    def seed_operators(self) -> list[Operator]:
        return [op for op in self.operators if 0 in arities(op)]

    def schedulable(self) -> list[Operator]:
        """Operators asked again after seeding: those taking parents, and seed operators that are
        `repeatable` (seed-only ones ran once, in the seeding round)."""
        return [op for op in self.operators if max(arities(op)) > 0 or getattr(op, "repeatable", False)]

    def follow_ups(
        self,
        propose: Callable[[Operator, ParentSet], list[Candidate]],
    ) -> None:
        """Operators' own urgent jobs (`FollowsUp`), each (operator, parents) once, proposed now rather
        than through the proposal pool, their children ahead of every waiting candidate: in the pool they
        waited behind slow proposals (a network's captures, minutes each) and then took turns with
        seeds."""
        for operator in self.schedulable():
            if not isinstance(operator, FollowsUp):
                continue
            parents = operator.follow_up(self.graph)
            if not parents or (operator.name, parents) in self._followed_up:
                continue
            self._followed_up.add((operator.name, parents))
            for child in reversed(propose(operator, parents)):
                self.ready.add_urgent(child)

    # ------------------------------------------------------------- proposals
    def all_barren(self) -> bool:
        return all(op.name in self._barren for op in self.schedulable())

    def resting(self) -> dict[str, str]:
        """Operators sitting out, and why."""
        return {name: why for name, (_, why) in self._resting.items()}

    def next_job(self, waiting: bool) -> tuple[Operator, ParentSet] | None:
        """An operator and its parents, or None. `waiting`: evaluations are in flight, so operators that
        just gave nothing sit out until their report; with nothing in flight all may try again."""
        available = [op for op in self.schedulable() if op.name not in self._resting]
        fresh = [op for op in available if op.name not in self._barren]
        if fresh or waiting:
            available = fresh
        while available:
            operator = self.scheduler.choose(available, self.rng)
            counts = list(arities(operator))
            self.rng.shuffle(counts)
            for arity in sorted(counts, key=lambda a: a == 0):  # parents first; generate-from-spec last
                parent_sets = self.policy.select(self.graph, self.rng, 1, arity)
                if parent_sets and len(parent_sets[0]) == arity:
                    return operator, self.with_strict_turn(parent_sets[0])
            available.remove(operator)
        return None

    def with_strict_turn(self, parents: ParentSet) -> ParentSet:
        """Every STRICT_TURN-th one-parent job of a permissive run goes to the best own-kernel node."""
        if self.strict or len(parents) != 1:
            return parents
        self._one_parent_jobs += 1
        if self._one_parent_jobs % STRICT_TURN:
            return parents
        strict = best_strict(self.graph)
        return (strict.id,) if strict is not None else parents

    def proposal_done(self, operator_name: str, fresh: int) -> None:
        self.barren_rounds = 0 if fresh else self.barren_rounds + 1
        if fresh:  # it gave something new: no longer barren, and a later rest starts short again
            self._barren.discard(operator_name)
            self._rests.pop(operator_name, None)
            return
        # a zero-reward pull, so the bandit learns that it declines here
        self.scheduler.update(operator_name, 0.0, BARREN_PROPOSAL_COST)
        self._barren.add(operator_name)
        operator = next((op for op in self.operators if op.name == operator_name), None)
        reason = operator.rest_reason() if isinstance(operator, Rests) else None
        if reason:
            rests = self._rests[operator_name] = self._rests.get(operator_name, 0) + 1
            length = min(2 ** (rests - 1), MAX_REST_REPORTS)
            self._resting[operator_name] = (self._reports + length, reason)
            log.info("operator %s rests for %d evaluation(s): %s", operator_name, length, reason)

    # ------------------------------------------------------------- reports
    def evaluated(self, candidate: Candidate, fitness: FitnessValue, cost_s: float) -> None:
        """A report was recorded: the graph changed, so every operator may have something again. The
        operator that made the candidate is rewarded by its gain over its best parent, per second."""
        self._barren.clear()
        self._reports += 1
        for name, (until, _) in list(self._resting.items()):
            if self._reports >= until:
                del self._resting[name]
        self.policy.observe(self.graph, candidate.id)
        parent_fitness = [self.graph.node(p).fitness for p in candidate.parent_ids if p in self.graph]
        parent_best = max((f.objective for f in parent_fitness if f is not None), default=0.0)
        reward = 0.0
        if fitness.feasible:
            reward = fitness.objective / parent_best - 1.0 if parent_best > 0 else 1.0
        self.scheduler.update(candidate.operator, max(0.0, reward), max(cost_s, 1e-3))
