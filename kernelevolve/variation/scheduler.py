"""Which operator to apply next: a bandit on improvement per unit of cost.

Rewards are relative fitness improvements of a child over its best parent (0 for failures),
clipped to [0, reward_cap] so one lucky jump does not lock the bandit onto an operator forever.
Costs are whatever the engine pays per child (seconds of evaluation plus LLM time, or USD); UCB
divides each operator's mean reward by its mean cost relative to the average cost of all
operators, so a cheap operator that improves a little can beat an expensive one that improves a
little more. Everything random comes from the caller's rng, so runs are reproducible.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelevolve.search.interfaces import Operator

STRATEGIES = ("ucb", "round_robin", "weighted")


@dataclass
class _Arm:
    pulls: int = 0
    reward_sum: float = 0.0
    cost_sum: float = 0.0

    @property
    def mean_reward(self) -> float:
        return self.reward_sum / self.pulls if self.pulls else 0.0

    @property
    def mean_cost(self) -> float:
        return self.cost_sum / self.pulls if self.pulls else 0.0


def min_arity(operator: Operator) -> int:
    """Fewest parents an operator can work from (`arities` when it declares several)."""
    arities: Sequence[int] = getattr(operator, "arities", None) or (operator.arity,)
    return max(0, min(arities))


class OperatorScheduler:
    """`strategy`: "ucb" (UCB1 on reward per relative cost), "round_robin", or "weighted"
    (random in proportion to `weights`, default 1 each)."""

    def __init__(
        self,
        strategy: str = "ucb",
        *,
        exploration: float = math.sqrt(2.0),
        weights: Mapping[str, float] | None = None,
        reward_cap: float = 1.0,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown scheduler strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
        if weights and any(w < 0 for w in weights.values()):
            raise ValueError("scheduler weights must be >= 0")
        self.strategy = strategy
        self.exploration = exploration
        self.weights = dict(weights or {})
        self.reward_cap = reward_cap
        self._arms: dict[str, _Arm] = {}
        self._turn = 0

    def _arm(self, name: str) -> _Arm:
        return self._arms.setdefault(name, _Arm())

    def choose(self, available: list[Operator], rng: random.Random, max_arity: int | None = None) -> Operator:
        """Pick one of `available`; with `max_arity` (parents the graph can supply), operators needing
        more are skipped. Raises ValueError when nothing is left to choose from."""
        pool = [op for op in available if max_arity is None or min_arity(op) <= max_arity]
        if not pool:
            names = ", ".join(f"{op.name} (arity {op.arity})" for op in available) or "none"
            raise ValueError(f"no operator can be served (max arity {max_arity}); available: {names}")
        if self.strategy == "round_robin":
            choice = pool[self._turn % len(pool)]
            self._turn += 1
            return choice
        if self.strategy == "weighted":
            weights = [self.weights.get(op.name, 1.0) for op in pool]
            if sum(weights) <= 0:
                weights = [1.0] * len(pool)
            return rng.choices(pool, weights=weights, k=1)[0]
        return self._ucb(pool, rng)

    def _ucb(self, pool: list[Operator], rng: random.Random) -> Operator:
        untried = [op for op in pool if self._arm(op.name).pulls == 0]
        if untried:
            return untried[0]  # every arm once first, in the order given
        arms = [self._arm(op.name) for op in pool]
        total = sum(arm.pulls for arm in arms)
        costs = [arm.mean_cost for arm in arms]
        mean_cost = sum(costs) / len(costs)
        scores = []
        for arm in arms:
            relative_cost = arm.mean_cost / mean_cost if mean_cost > 0 else 1.0
            value = arm.mean_reward / max(relative_cost, 1e-6)
            scores.append(value + self.exploration * math.sqrt(math.log(total) / arm.pulls))
        best = max(scores)
        tied = [
            op for op, score in zip(pool, scores, strict=True) if math.isclose(score, best, rel_tol=1e-12)
        ]
        return tied[0] if len(tied) == 1 else rng.choice(tied)

    def update(self, operator_name: str, reward: float, cost: float) -> None:
        """One child's outcome: `reward` relative improvement (0 for a failure), `cost` what it took."""
        if math.isnan(reward) or math.isnan(cost):
            raise ValueError(f"reward and cost must be numbers, got {reward!r}, {cost!r}")
        arm = self._arm(operator_name)
        arm.pulls += 1
        arm.reward_sum += min(max(reward, 0.0), self.reward_cap)
        arm.cost_sum += max(cost, 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "operators": {
                name: {
                    "pulls": arm.pulls,
                    "reward_sum": round(arm.reward_sum, 6),
                    "mean_reward": round(arm.mean_reward, 6),
                    "cost_sum": round(arm.cost_sum, 6),
                    "mean_cost": round(arm.mean_cost, 6),
                }
                for name, arm in sorted(self._arms.items())
            },
        }


def improvement_reward(child_objective: float, parent_objectives: Sequence[float], feasible: bool) -> float:
    """Relative improvement of a child over its best parent; a working child of no working parent
    (a seed, or a repair) scores 1."""
    if not feasible:
        return 0.0
    best = max(parent_objectives, default=0.0)
    return child_objective / best - 1.0 if best > 0 else 1.0
