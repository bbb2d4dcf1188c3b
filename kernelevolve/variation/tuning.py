"""Parameter tuning of any candidate by editing the literals of its tunables (no LLM)."""

from __future__ import annotations

import logging
import random
from typing import Any

from kernelevolve.interfaces import ProposalContext
from kernelevolve.types import Candidate
from kernelevolve.variation.tunables import Tunable, apply_values, find_tunables

log = logging.getLogger(__name__)


class TuningOperator:
    """Mutates one or two tunables of a parent, preferring the neighbouring values of each.

    A step to an adjacent choice is local search around a good configuration; with probability
    `jump_probability` a random choice is taken instead, so the search can leave a local optimum.
    """

    name = "tune"
    arity = 1

    def __init__(self, max_changes: int = 2, jump_probability: float = 0.2, attempts: int = 12) -> None:
        self.max_changes = max_changes
        self.jump_probability = jump_probability
        self.attempts = attempts

    def _step(self, tunable: Tunable, rng: random.Random) -> Any:
        choices = list(tunable.choices)
        if tunable.value not in choices or rng.random() < self.jump_probability:
            others = [c for c in choices if c != tunable.value]
            return rng.choice(others) if others else tunable.value
        index = choices.index(tunable.value)
        neighbours = [choices[i] for i in (index - 1, index + 1) if 0 <= i < len(choices)]
        return rng.choice(neighbours) if neighbours else tunable.value

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if len(ctx.parents) != 1:
            return []
        parent = ctx.graph.node(ctx.parents[0]).candidate
        tunables = [t for t in find_tunables(parent.source) if len(t.choices) > 1]
        if not tunables:
            return []
        children: list[Candidate] = []
        seen = {parent.id}
        for _ in range(self.attempts):
            if len(children) >= max(1, ctx.budget_hint):
                break
            count = min(len(tunables), ctx.rng.randint(1, self.max_changes))
            changed = {t.name: self._step(t, ctx.rng) for t in ctx.rng.sample(tunables, count)}
            changed = {
                k: v for k, v in changed.items() if v != next(t.value for t in tunables if t.name == k)
            }
            if not changed:
                continue
            source = apply_values(parent.source, changed)
            params = {t.name: t.value for t in find_tunables(source)}
            child = Candidate(
                source=source,
                backend=parent.backend,
                operator=self.name,
                mode="tune",
                parent_ids=(parent.id,),
                metadata={
                    **{k: v for k, v in parent.metadata.items() if k in ("template", "pattern")},
                    "params": params,
                    "changed": changed,
                },
            )
            if child.id in seen or child.id in ctx.graph:
                continue
            seen.add(child.id)
            children.append(child)
        return children
