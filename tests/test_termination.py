from __future__ import annotations

import pytest

from kernelevolve.search.interfaces import SearchState, TerminationRule
from kernelevolve.search.termination import (
    AnyOf,
    CostBudget,
    MaxEvaluations,
    Plateau,
    ProposalsExhausted,
    TargetSpeedup,
    WallClock,
    build_termination,
)
from kernelevolve.types import FitnessValue


def state(
    evaluations: int = 0,
    elapsed_s: float = 0.0,
    best: float | None = None,
    exhausted: bool = False,
    cost: float = 0.0,
) -> SearchState:
    return SearchState(
        evaluations=evaluations,
        elapsed_s=elapsed_s,
        best=FitnessValue(True, best) if best is not None else None,
        evaluations_since_improvement=0,
        proposals_exhausted=exhausted,
        llm_cost_usd=cost,
    )


def test_max_evaluations() -> None:
    rule = MaxEvaluations(40)
    assert rule.check(state(39)) == (False, "")
    stop, reason = rule.check(state(40))
    assert stop and "max_evaluations" in reason and "40" in reason


def test_wall_clock() -> None:
    rule = WallClock(300)
    assert not rule.check(state(elapsed_s=299.9))[0]
    stop, reason = rule.check(state(elapsed_s=301.25))
    assert stop and "301.2" in reason and "300" in reason


def test_target_speedup_ignores_infeasible_best() -> None:
    rule = TargetSpeedup(2.0)
    assert not rule.check(state(best=1.99))[0]
    infeasible = SearchState(5, 1.0, FitnessValue(False, 10.0), 0)
    assert not rule.check(infeasible)[0]
    stop, reason = rule.check(state(best=2.5))
    assert stop and "2.5x" in reason and "2x" in reason


def test_cost_budget() -> None:
    rule = CostBudget(1.5)
    assert not rule.check(state(cost=1.49))[0]
    stop, reason = rule.check(state(cost=1.5))
    assert stop and "$1.5000" in reason


def test_llm_call_and_token_budgets() -> None:
    rules = build_termination({"max_llm_calls": 30, "max_llm_tokens": 50_000, "proposals_exhausted": False})
    assert [r.name for r in rules.rules] == ["max_llm_calls", "max_llm_tokens"]
    calm = SearchState(3, 1.0, None, 0, llm_calls=29, llm_tokens=49_999)
    assert rules.check(calm) == (False, "")
    assert rules.check(SearchState(3, 1.0, None, 0, llm_calls=30)) == (
        True,
        "max_llm_calls: 30 LLM calls reached the limit of 30",
    )
    stop, reason = rules.check(SearchState(3, 1.0, None, 0, llm_calls=2, llm_tokens=50_001))
    assert stop and reason.startswith("max_llm_tokens: 50001")
    with pytest.raises(ValueError, match="max_llm_calls must be an integer"):
        build_termination({"max_llm_calls": 2.5})


def test_proposals_exhausted() -> None:
    rule = ProposalsExhausted()
    assert not rule.check(state(7))[0]
    stop, reason = rule.check(state(7, exhausted=True))
    assert stop and "7 evaluations" in reason


def test_plateau_counts_only_gains_of_the_minimum_size() -> None:
    rule = Plateau(patience=3, min_relative_gain=0.1)
    assert not rule.check(state(0))[0]
    assert not rule.check(state(1, best=1.0))[0]  # first feasible result: reference 1.0 at eval 1
    assert not rule.check(state(2, best=1.05))[0]  # +5% does not count
    assert not rule.check(state(3, best=1.09))[0]
    stop, reason = rule.check(state(4, best=1.09))
    assert stop and "plateau: 3 evaluations" in reason and "10.0%" in reason and "1x" in reason


def test_plateau_resets_on_a_real_gain() -> None:
    rule = Plateau(patience=3, min_relative_gain=0.1)
    rule.check(state(1, best=1.0))
    rule.check(state(3, best=1.1))  # exactly +10% counts
    assert not rule.check(state(5, best=1.1))[0]
    assert rule.check(state(6, best=1.1))[0]


def test_plateau_without_anything_feasible() -> None:
    rule = Plateau(patience=2)
    assert not rule.check(state(0))[0]
    assert not rule.check(state(1))[0]
    stop, reason = rule.check(state(2))
    assert stop and "no feasible candidate" in reason


def test_any_of_reports_the_first_rule_that_fires_and_checks_all() -> None:
    plateau = Plateau(patience=5)
    rule = AnyOf([MaxEvaluations(10), WallClock(60), plateau])
    assert isinstance(rule, TerminationRule)
    assert rule.check(state(3, elapsed_s=10, best=1.0)) == (False, "")
    stop, reason = rule.check(state(10, elapsed_s=100, best=1.0))
    assert stop and reason.startswith("max_evaluations")
    stop, reason = WallClock(60).check(state(10, elapsed_s=100))
    assert stop and reason.startswith("wall_clock")
    # Plateau saw the state at 3 evaluations through AnyOf, so 5 more without a gain fire it.
    assert AnyOf([plateau]).check(state(8, best=1.0))[0]
    assert AnyOf([]).check(state(10**6)) == (False, "")


def test_build_termination_from_config() -> None:
    rule = build_termination(
        {
            "max_evaluations": 40,
            "wall_clock_s": 300,
            "plateau": {"patience": 20, "min_relative_gain": 0.01},
            "target_speedup": None,
            "cost_budget_usd": None,
        }
    )
    names = [r.name for r in rule.rules]
    assert names == ["max_evaluations", "wall_clock", "plateau", "proposals_exhausted"]
    assert rule.check(state(40))[1].startswith("max_evaluations")
    assert rule.check(state(1, exhausted=True))[1].startswith("proposals_exhausted")
    everything = build_termination(
        {"target_speedup": 3, "cost_budget_usd": 2.0, "plateau": 7, "proposals_exhausted": False}
    )
    assert [r.name for r in everything.rules] == ["target_speedup", "cost_budget", "plateau"]
    assert not everything.check(state(1, exhausted=True))[0]
    assert everything.check(state(2, best=3.0))[1].startswith("target_speedup")


def test_build_termination_rejects_bad_config() -> None:
    with pytest.raises(ValueError, match="valid keys: max_evaluations, wall_clock_s"):
        build_termination({"max_evals": 3})
    with pytest.raises(ValueError, match="valid keys: patience, min_relative_gain"):
        build_termination({"plateau": {"patient": 3}})
    with pytest.raises(ValueError, match="needs a patience"):
        build_termination({"plateau": {"min_relative_gain": 0.1}})
    with pytest.raises(ValueError, match="finite number"):
        build_termination({"max_evaluations": True})
    with pytest.raises(ValueError, match="integer"):
        build_termination({"max_evaluations": 2.5})
    with pytest.raises(ValueError, match=">= 0"):
        build_termination({"wall_clock_s": -1})
    with pytest.raises(ValueError, match="true or false"):
        build_termination({"proposals_exhausted": "yes"})


def test_build_termination_accepts_omegaconf() -> None:
    omegaconf = pytest.importorskip("omegaconf")
    cfg = omegaconf.OmegaConf.create(
        {"max_evaluations": 5, "plateau": {"patience": 2, "min_relative_gain": 0.0}}
    )
    rule = build_termination(cfg)
    assert [r.name for r in rule.rules] == ["max_evaluations", "plateau", "proposals_exhausted"]
