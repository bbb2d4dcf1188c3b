"""Candidates waiting for evaluation: seeds and children take turns.

A search seeds from several operators at once (templates, compiler seeds in up to six variants,
fusion seeds...). Evaluated first-in first-out, the seeds alone used up a small budget, and a
promising child was never evaluated (`experiments/sample_sweep_h200/run_03/`). Here seeds are
interleaved across the operators that made them, and once a child exists it alternates with the
remaining seeds. A follow-up's child (`interfaces.FollowsUp`: a host-bound kernel's graph replay)
goes first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from kernelevolve.types import Candidate


class ReadyQueue:
    def __init__(self) -> None:
        self._seeds: deque[Candidate] = deque()
        self._children: deque[Candidate] = deque()
        self._seed_turn = False  # a first child goes ahead of the waiting seeds

    def __len__(self) -> int:
        return len(self._seeds) + len(self._children)

    @property
    def seeds(self) -> int:
        return len(self._seeds)

    @property
    def children(self) -> int:
        return len(self._children)

    def add_seeds(self, by_operator: Iterable[list[Candidate]]) -> None:
        """Each operator's seeds in its own order of preference, taken one from each operator in turn."""
        self._seeds.extend(_round_robin([list(seeds) for seeds in by_operator]))

    def add_child(self, candidate: Candidate) -> None:
        self._children.append(candidate)

    def add_urgent(self, candidate: Candidate) -> None:
        """A child that goes before everything waiting (an operator's follow-up)."""
        self._children.appendleft(candidate)
        self._seed_turn = False

    def add_pending(self, candidate: Candidate) -> None:
        """A candidate a resumed run found unevaluated: a seed if it has no parents."""
        (self._children if candidate.parent_ids else self._seeds).append(candidate)

    def pop(self) -> Candidate:
        if self._seeds and self._children:
            queue = self._seeds if self._seed_turn else self._children
            self._seed_turn = not self._seed_turn
            return queue.popleft()
        if self._seeds:
            return self._seeds.popleft()
        if self._children:
            return self._children.popleft()
        raise IndexError("pop from an empty ReadyQueue")


def _round_robin(lists: list[list[Candidate]]) -> Iterator[Candidate]:
    for rank in range(max((len(items) for items in lists), default=0)):
        for items in lists:
            if rank < len(items):
                yield items[rank]
