"""Termination rules: when the search stops, and a reason with numbers saying why.

Each rule implements `kernelevolve.search.interfaces.TerminationRule`. `build_termination` turns the
`search.termination` config block into one `AnyOf` rule; a null or absent key switches that rule off.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelevolve.search.interfaces import SearchState, TerminationRule

log = logging.getLogger(__name__)


def _number(key: str, value: Any, *, minimum: float = 0.0, integer: bool = False) -> float:
    # bool is an int in Python; "max_evaluations: true" is a config mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"termination {key} must be a finite number, got {value!r}")
    if integer and int(value) != value:
        raise ValueError(f"termination {key} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"termination {key} must be >= {minimum}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class MaxEvaluations:
    limit: int
    name = "max_evaluations"

    def __post_init__(self) -> None:
        _number(self.name, self.limit, minimum=0, integer=True)

    def check(self, state: SearchState) -> tuple[bool, str]:
        if state.evaluations >= self.limit:
            return True, f"max_evaluations: {state.evaluations} evaluations reached the limit of {self.limit}"
        return False, ""


@dataclass(frozen=True)
class WallClock:
    seconds: float
    name = "wall_clock"

    def __post_init__(self) -> None:
        _number("wall_clock_s", self.seconds)

    def check(self, state: SearchState) -> tuple[bool, str]:
        if state.elapsed_s >= self.seconds:
            return True, f"wall_clock: {state.elapsed_s:.1f} s elapsed, limit {self.seconds:g} s"
        return False, ""


class Plateau:
    """Stop after `patience` evaluations without a relative gain of at least `min_relative_gain`.

    The engine's `evaluations_since_improvement` counts any gain, however small, so the rule keeps
    its own reference: the best objective at the last gain that counted and the evaluation count
    then. It is stateful and expects to see every state of one run in order; a resumed run starts
    counting from its first check.
    """

    name = "plateau"

    def __init__(self, patience: int, min_relative_gain: float = 0.0) -> None:
        _number("plateau.patience", patience, minimum=1, integer=True)
        _number("plateau.min_relative_gain", min_relative_gain)
        self.patience = int(patience)
        self.min_relative_gain = float(min_relative_gain)
        self._reference: float | None = None  # best feasible objective when a gain last counted
        self._since: int | None = None  # evaluation count then

    def _gained(self, objective: float) -> bool:
        if self._reference is None:
            return True
        if self.min_relative_gain > 0:
            return objective >= self._reference * (1.0 + self.min_relative_gain)
        return objective > self._reference

    def check(self, state: SearchState) -> tuple[bool, str]:
        if self._since is None:
            self._since = state.evaluations
        best = state.best
        if best is not None and best.feasible and self._gained(best.objective):
            self._reference = best.objective
            self._since = state.evaluations
        stale = state.evaluations - self._since
        if stale >= self.patience:
            ref = "no feasible candidate" if self._reference is None else f"best {self._reference:.4g}x"
            return True, (
                f"plateau: {stale} evaluations without a gain of {self.min_relative_gain:.1%} "
                f"({ref}; patience {self.patience})"
            )
        return False, ""


@dataclass(frozen=True)
class TargetSpeedup:
    speedup: float
    name = "target_speedup"

    def __post_init__(self) -> None:
        _number(self.name, self.speedup)

    def check(self, state: SearchState) -> tuple[bool, str]:
        best = state.best
        if best is not None and best.feasible and best.objective >= self.speedup:
            return True, f"target_speedup: best {best.objective:.4g}x reached the target {self.speedup:g}x"
        return False, ""


@dataclass(frozen=True)
class CostBudget:
    usd: float
    name = "cost_budget"

    def __post_init__(self) -> None:
        _number("cost_budget_usd", self.usd)

    def check(self, state: SearchState) -> tuple[bool, str]:
        if state.llm_cost_usd >= self.usd:
            return True, f"cost_budget: LLM cost ${state.llm_cost_usd:.4f} reached the budget ${self.usd:.4f}"
        return False, ""


@dataclass(frozen=True)
class LLMCalls:
    limit: int
    name = "max_llm_calls"

    def __post_init__(self) -> None:
        _number(self.name, self.limit, minimum=0, integer=True)

    def check(self, state: SearchState) -> tuple[bool, str]:
        if state.llm_calls >= self.limit:
            return True, f"max_llm_calls: {state.llm_calls} LLM calls reached the limit of {self.limit}"
        return False, ""


@dataclass(frozen=True)
class LLMTokens:
    limit: int
    name = "max_llm_tokens"

    def __post_init__(self) -> None:
        _number(self.name, self.limit, minimum=0, integer=True)

    def check(self, state: SearchState) -> tuple[bool, str]:
        if state.llm_tokens >= self.limit:
            return True, f"max_llm_tokens: {state.llm_tokens} LLM tokens reached the limit of {self.limit}"
        return False, ""


@dataclass(frozen=True)
class ProposalsExhausted:
    name = "proposals_exhausted"

    def check(self, state: SearchState) -> tuple[bool, str]:
        if state.proposals_exhausted:
            return True, (
                f"proposals_exhausted: no operator had anything new to propose after "
                f"{state.evaluations} evaluations"
            )
        return False, ""


class AnyOf:
    """Stops when any rule does; the reason is the first firing rule's (in the given order).

    Every rule is checked each time, so stateful rules such as Plateau see every state.
    """

    name = "any_of"

    def __init__(self, rules: Sequence[TerminationRule]) -> None:
        self.rules = tuple(rules)

    def check(self, state: SearchState) -> tuple[bool, str]:
        results = [rule.check(state) for rule in self.rules]
        for stop, reason in results:
            if stop:
                return True, reason
        return False, ""


VALID_KEYS = (
    "max_evaluations",
    "wall_clock_s",
    "plateau",
    "target_speedup",
    "cost_budget_usd",
    "max_llm_calls",
    "max_llm_tokens",
    "proposals_exhausted",
)
_PLATEAU_KEYS = ("patience", "min_relative_gain")


def _plateau(value: Any) -> Plateau:
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in _PLATEAU_KEYS)
        if unknown:
            raise ValueError(f"unknown plateau key(s) {unknown}; valid keys: {', '.join(_PLATEAU_KEYS)}")
        if value.get("patience") is None:
            raise ValueError("plateau needs a patience (evaluations without improvement)")
        return Plateau(value["patience"], value.get("min_relative_gain") or 0.0)
    # A bare number is the patience.
    return Plateau(value)


def build_termination(config: Mapping[str, Any]) -> AnyOf:
    """One rule from a config block such as::

        {"max_evaluations": 40, "wall_clock_s": 300,
         "plateau": {"patience": 20, "min_relative_gain": 0.01},
         "target_speedup": null, "cost_budget_usd": null, "max_llm_calls": null, "max_llm_tokens": null}

    The LLM rules count the whole run (every session of a resumed one), as the accounting does.

    Null or absent keys are off, except ``proposals_exhausted``, which defaults to true because the
    engine cannot continue once no operator has anything to propose (set it false to keep waiting).
    """
    unknown = sorted(str(k) for k in config if k not in VALID_KEYS)
    if unknown:
        raise ValueError(f"unknown termination key(s) {unknown}; valid keys: {', '.join(VALID_KEYS)}")
    rules: list[TerminationRule] = []
    if config.get("max_evaluations") is not None:
        rules.append(MaxEvaluations(config["max_evaluations"]))
    if config.get("wall_clock_s") is not None:
        rules.append(WallClock(config["wall_clock_s"]))
    if config.get("target_speedup") is not None:
        rules.append(TargetSpeedup(config["target_speedup"]))
    if config.get("cost_budget_usd") is not None:
        rules.append(CostBudget(config["cost_budget_usd"]))
    if config.get("max_llm_calls") is not None:
        rules.append(LLMCalls(config["max_llm_calls"]))
    if config.get("max_llm_tokens") is not None:
        rules.append(LLMTokens(config["max_llm_tokens"]))
    if config.get("plateau") is not None:
        rules.append(_plateau(config["plateau"]))
    if not any(
        isinstance(r, (MaxEvaluations, WallClock, Plateau, CostBudget, LLMCalls, LLMTokens)) for r in rules
    ):
        log.warning("termination: no evaluation, time, plateau or cost limit set; the run may not end")
    exhausted = config.get("proposals_exhausted", True)
    if not isinstance(exhausted, bool) and exhausted is not None:
        raise ValueError(f"termination proposals_exhausted must be true or false, got {exhausted!r}")
    if exhausted:
        rules.append(ProposalsExhausted())
    return AnyOf(rules)
