"""Greedy beam selection, plus the ranking and sampling helpers the other policies share.

Contract every policy keeps (kernelevolve.search.interfaces.SelectionPolicy): at most `count` parent sets
of exactly `arity` distinct evaluated ids (fewer when fewer evaluated nodes exist), `count` empty
tuples for arity 0, never a pending node, and the same answer for the same graph and rng state.
Nothing here iterates a Python set of ids: string hashing differs between processes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from kernelevolve.search.graph import Node, SearchGraph
from kernelevolve.search.interfaces import ParentSet
from kernelevolve.search.selection.cost import cost_discounts
from kernelevolve.types import Status

# How far a failed candidate got: a kernel that ran but was wrong is a better repair starting point
# than one that never compiled.
STATUS_PROGRESS: dict[Status, int] = {
    Status.OK: 6,
    Status.INCORRECT: 5,
    Status.TIMEOUT: 4,
    Status.RUNTIME_ERROR: 3,
    Status.WORKER_CRASH: 2,
    Status.COMPILE_ERROR: 1,
    Status.REJECTED_STATIC: 0,
}

# pick(rng, already_chosen) -> one more id not in already_chosen, or None when none is left.
Picker = Callable[[random.Random, Sequence[str]], "str | None"]


def quality(node: Node) -> tuple[bool, float, int, int]:
    """Sort key, higher is better: feasible, objective, how far a failure got, then newer."""
    fitness = node.fitness
    progress = STATUS_PROGRESS.get(node.report.status, 0) if node.report is not None else -1
    if fitness is None:
        return (False, 0.0, progress, node.order)
    return (fitness.feasible, fitness.objective, progress, node.order)


def ranked(nodes: Sequence[Node]) -> list[Node]:
    """Evaluated nodes best first (see `quality`)."""
    return sorted((n for n in nodes if n.evaluated), key=quality, reverse=True)


def check_request(count: int, arity: int) -> None:
    if arity < 0:
        raise ValueError(f"arity must be >= 0, got {arity}")
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")


def weighted_pick(
    rng: random.Random, ids: Sequence[str], weights: Sequence[float], exclude: Sequence[str]
) -> str | None:
    """One id drawn by weight among those not excluded (None if none is left)."""
    pool = [(i, w) for i, w in zip(ids, weights, strict=True) if i not in exclude and w > 0]
    if not pool:
        return None
    return rng.choices([i for i, _ in pool], weights=[w for _, w in pool], k=1)[0]


def first_not_in(ids: Sequence[str], exclude: Sequence[str]) -> str | None:
    return next((i for i in ids if i not in exclude), None)


def draw_sets(rng: random.Random, count: int, arity: int, pick: Picker, attempts: int = 4) -> list[ParentSet]:
    """Up to `count` sets of `arity` distinct ids from `pick`, avoiding repeated sets when it can.

    A set is redrawn up to `attempts` times if it repeats one already chosen; after that the repeat
    is kept (a small pool expanded several times is still useful for stochastic operators).
    """
    check_request(count, arity)
    if arity == 0:
        return [() for _ in range(count)]
    chosen: dict[ParentSet, None] = {}
    out: list[ParentSet] = []
    for _ in range(count):
        members: list[str] = []
        for _attempt in range(attempts):
            members = []
            while len(members) < arity:
                pid = pick(rng, members)
                if pid is None:
                    return out  # not enough distinct nodes for one more set
                members.append(pid)
            if tuple(members) not in chosen:
                break
        parent_set = tuple(members)
        chosen[parent_set] = None
        out.append(parent_set)
    return out


def rank_weights(n: int, weighting: str) -> list[float]:
    if weighting == "uniform":
        return [1.0] * n
    return [float(n - i) for i in range(n)]  # linear rank weights: best gets n, last gets 1


class GreedyPolicy:
    """Beam search: parents come from the `beam_width` best feasible nodes.

    `weighting` is "rank" (linear rank weights, best most likely) or "uniform". With probability
    `epsilon` a parent is instead any evaluated node, so the search can leave a local optimum.
    While nothing is feasible the beam holds the failed nodes that got furthest (then newest), so
    repair operators get work.

    Both draws weigh a node by its evaluation cost (`selection.cost`): one whose evaluation took k times
    as long as the best node's is picked (1/k) ** `cost_exponent` as often; 0 ignores cost.
    """

    name = "greedy"
    WEIGHTINGS = ("rank", "uniform")

    def __init__(
        self, beam_width: int = 4, weighting: str = "rank", epsilon: float = 0.1, cost_exponent: float = 1.0
    ) -> None:
        if beam_width < 1:
            raise ValueError(f"greedy beam_width must be >= 1, got {beam_width}")
        if weighting not in self.WEIGHTINGS:
            raise ValueError(f"unknown greedy weighting {weighting!r}; valid: {', '.join(self.WEIGHTINGS)}")
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"greedy epsilon must be in [0, 1], got {epsilon}")
        if cost_exponent < 0:
            raise ValueError(f"greedy cost_exponent must be >= 0 (0 ignores cost), got {cost_exponent}")
        self.beam_width = beam_width
        self.weighting = weighting
        self.epsilon = epsilon
        self.cost_exponent = cost_exponent

    def beam(self, graph: SearchGraph) -> list[Node]:
        return self._beam_of(ranked(graph.evaluated()))

    def _beam_of(self, order: list[Node]) -> list[Node]:
        feasible = [n for n in order if n.feasible]
        return (feasible or order)[: self.beam_width]

    def select(self, graph: SearchGraph, rng: random.Random, count: int, arity: int) -> list[ParentSet]:
        check_request(count, arity)
        if arity == 0:
            return [() for _ in range(count)]
        everyone_nodes = ranked(graph.evaluated())
        everyone = [n.id for n in everyone_nodes]
        beam = [n.id for n in self._beam_of(everyone_nodes)]
        # Costs relative to the best node's evaluation: it keeps its full weight, dearer nodes lose some.
        discount = cost_discounts(everyone_nodes, self.cost_exponent)
        weights = [
            w * discount[i] for w, i in zip(rank_weights(len(beam), self.weighting), beam, strict=True)
        ]
        explore_weights = [discount[i] for i in everyone]

        def pick(r: random.Random, exclude: Sequence[str]) -> str | None:
            explore = self.epsilon > 0 and r.random() < self.epsilon
            if explore and (explored := weighted_pick(r, everyone, explore_weights, exclude)):
                return explored
            # Beam first; when it is used up (arity above the beam) the next best evaluated node.
            return weighted_pick(r, beam, weights, exclude) or first_not_in(everyone, exclude)

        return draw_sets(rng, count, arity, pick)

    def observe(self, graph: SearchGraph, node_id: str) -> None:
        """Greedy keeps no statistics."""
