"""Timed calls are checked among the calls a timing makes, not the calls it plans (`eval/check_schedule`)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from kernelevolve.eval import timers
from kernelevolve.eval.check_schedule import FIRST_CHECKS, TimingPlan, secret_calls
from kernelevolve.eval.harness import evaluate
from kernelevolve.platforms import Platform
from kernelevolve.types import Status
from tests.adversarial import test_hacks
from tests.adversarial.spec_fixtures import load_cases

SETTLE = timers.Settle(min_trials=20, relative_halfwidth=0.01, every=10, long_call_ms=10.0)


def test_without_stops_the_draws_span_the_plan() -> None:
    plan = TimingPlan(warmup=10, trials=100, settle=None, early_warmup=False)
    assert plan.stops() == [110]
    drawn = secret_calls(plan, random.Random(1))
    assert len(set(drawn)) == FIRST_CHECKS and all(0 <= c < 110 for c in drawn)


def test_settling_puts_the_first_draws_before_its_first_stop() -> None:
    gpu = TimingPlan(warmup=10, trials=100, settle=SETTLE, early_warmup=True)
    # fewest warm-up calls (3), then a long call's first settling point (10 trials), then every 10
    assert gpu.stops() == [13, 23, 33, 43, 53, 63, 73, 83, 93, 110]
    cpu = TimingPlan(warmup=1, trials=100, settle=SETTLE, early_warmup=False)
    assert cpu.stops()[:2] == [21, 31]  # the CPU's timing settles from `min_trials` on
    for seed in range(50):
        drawn = secret_calls(gpu, random.Random(seed))
        assert len([c for c in drawn if c < 13]) == FIRST_CHECKS  # all among calls every timing makes
        stops = gpu.stops()
        assert [len([c for c in drawn if a <= c < b]) for a, b in zip(stops, stops[1:], strict=False)] == [
            1
        ] * 9


def test_a_plan_shorter_than_the_first_checks_is_checked_whole() -> None:
    plan = TimingPlan(warmup=1, trials=1, settle=None, early_warmup=False)
    assert secret_calls(plan, random.Random(0)) == [0, 1]


def test_wrong_between_settle_points_is_caught(
    cpu_platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """100 trials that settle after 10: the hack is wrong on nine of them. Its three checks were drawn over
    the 101 planned calls before, and about three runs in four were accepted."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    settings = replace(
        test_hacks.SETTINGS,
        timing_trials=100,
        warmup_trials=1,
        settle_relative_halfwidth=100.0,  # any timing is steady enough: it ends after its first 10 trials
        settle_min_trials=10,
        settle_long_call_ms=0.0,
    )
    monkeypatch.setattr(test_hacks, "SETTINGS", settings)
    case = next(c for c in load_cases("hacks") if c.name == "cheat_between_settle_points")
    report = evaluate(test_hacks.request_for(case, cpu_platform), cpu_platform)
    assert (report.status, report.error_name) == (Status.INCORRECT, "timed_output_mismatch"), report.feedback
