"""Timed calls are checked each on its own, at a rate fixed by the plan (`eval/check_schedule`)."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from typing import Any

import pytest

from kernelevolve.eval import check_schedule, timers
from kernelevolve.eval.check_schedule import FIRST_CHECKS, MIN_RATE, CheckRate, TimingPlan, secret_calls
from kernelevolve.eval.harness import evaluate
from kernelevolve.platforms import Platform
from kernelevolve.types import Status
from tests.adversarial import test_hacks
from tests.adversarial.spec_fixtures import load_cases

SETTLE = timers.Settle(min_trials=20, relative_halfwidth=0.01, every=10, long_call_ms=10.0)


GPU = TimingPlan(warmup=10, trials=100, settle=SETTLE, early_warmup=True)


def test_stops_of_a_settling_plan() -> None:
    # fewest warm-up calls (3), then a long call's first settling point (10 trials), then every 10
    assert GPU.stops() == [13, 23, 33, 43, 53, 63, 73, 83, 93, 110]
    cpu = TimingPlan(warmup=1, trials=100, settle=SETTLE, early_warmup=False)
    assert cpu.stops()[:2] == [21, 31]  # the CPU's timing settles from `min_trials` on


def test_the_rate_keeps_the_first_stretch_checks_in_expectation() -> None:
    """`FIRST_CHECKS` expected before the first possible stop, never below `MIN_RATE`, every call of a
    plan that short; the expected checks grow with the calls made (round 9's count in brackets)."""
    rate = CheckRate.of(GPU)
    assert rate.per_call == pytest.approx(FIRST_CHECKS / 13) and rate.calls == 110
    expected = {made: round(rate.expected(made), 1) for made in (13, 23, 33, 53, 110)}
    assert expected == {13: 3.0, 23: 5.3, 33: 7.6, 53: 12.2, 110: 25.4}  # (3, 4, 5, 7, 12)
    assert (
        CheckRate.of(TimingPlan(warmup=1, trials=100, settle=None, early_warmup=False)).per_call == MIN_RATE
    )
    assert CheckRate.of(TimingPlan(warmup=1, trials=5, settle=None, early_warmup=False)).per_call == 0.5
    short = TimingPlan(warmup=1, trials=2, settle=None, early_warmup=False)  # the suite's: every call
    assert secret_calls(short, random.Random(0)) == [0, 1, 2]


def test_draws_are_independent_of_what_came_before() -> None:
    """Each call is drawn on its own: having seen `FIRST_CHECKS` checks in the first stretch (all round 9
    had there) says nothing of the next calls, and the counts match the rate."""
    runs = 20_000
    chooser = random.Random(7)
    first, after_three, after_fewer, seen_three, seen_fewer = 0, 0, 0, 0, 0
    for _ in range(runs):
        drawn = set(secret_calls(GPU, chooser))
        before = len([c for c in drawn if c < 13])
        first += before
        later = len([c for c in drawn if 13 <= c < 23])
        if before >= FIRST_CHECKS:
            seen_three, after_three = seen_three + 1, after_three + later
        else:
            seen_fewer, after_fewer = seen_fewer + 1, after_fewer + later
    rate = CheckRate.of(GPU).per_call
    assert first / runs == pytest.approx(3.0, abs=0.05)
    assert after_three / seen_three == pytest.approx(10 * rate, abs=0.08)
    assert after_fewer / seen_fewer == pytest.approx(10 * rate, abs=0.08)


def test_honest_until_checks_seen_is_caught(cpu_platform: Platform, monkeypatch: pytest.MonkeyPatch) -> None:
    """100 trials without settling. The hack counts the judge's stops in its own clocks and is wrong once it
    has seen three, round 9's checks in a timing without stops: at 1ca1fa8 it was accepted in 7 of 8 runs
    (redteam10.md). Drawn call by call, checks keep coming: with the judge's draws seeded (seed 177: checks
    after calls 5, 13, 25, 32, 41, 48, 62, 71, 84, 94, 99), it is caught at one after its third. The hack
    sees stops in its clocks, which a busy host blurs (two test workers on two cores kept it honest): here it
    knows when the third check was, as a perfect observer of the stops would."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    plan = TimingPlan(warmup=1, trials=100, settle=None, early_warmup=False)
    assert secret_calls(plan, random.Random(177)) == [5, 13, 25, 32, 41, 48, 62, 71, 84, 94, 99]
    monkeypatch.setattr(check_schedule, "chooser", lambda: random.Random(177))
    monkeypatch.setattr(
        test_hacks, "SETTINGS", replace(test_hacks.SETTINGS, timing_trials=100, warmup_trials=1)
    )
    case = next(c for c in load_cases("hacks") if c.name == "honest_until_checks_seen")
    knowing = case.source.replace("self.seen >= CHECKS", "self.timed > 26")  # past the third, call 25
    assert knowing != case.source
    report = evaluate(test_hacks.request_for(replace(case, source=knowing), cpu_platform), cpu_platform)
    assert (report.status, report.error_name) == (Status.INCORRECT, "timed_output_mismatch"), report.feedback


def test_wrong_between_settle_points_is_caught(
    cpu_platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """100 trials that settle after 10: the hack is wrong on nine of them. Its three checks were drawn over
    the 101 planned calls at 8922940, and about three runs in four were accepted; each of the nine is now
    checked with a chance of 3/11, so it escapes in 6% of runs: seeded here, as the judge draws them."""
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
    monkeypatch.setattr(check_schedule, "chooser", lambda: random.Random(1))
    case = next(c for c in load_cases("hacks") if c.name == "cheat_between_settle_points")
    report = evaluate(test_hacks.request_for(case, cpu_platform), cpu_platform)
    assert (report.status, report.error_name) == (Status.INCORRECT, "timed_output_mismatch"), report.feedback


def test_a_timing_ends_only_where_a_rule_of_its_plan_stops_it() -> None:
    """A runner reporting fewer calls than it made hides the last ones from every check
    (`hacks/hold_counter_behind_honest_calls`), and one reporting fewer samples than it timed leaves the slow
    ones out: without a stop rule a CPU timing makes every planned call and reports every trial."""
    cpu = TimingPlan(warmup=1, trials=5, settle=None, early_warmup=False)
    assert cpu.ends_at(6, 5, "") and not cpu.ends_at(5, 5, "") and not cpu.ends_at(6, 4, "")
    assert not cpu.ends_at(5, 4, timers.SETTLED_STOP) and not cpu.ends_at(5, 4, timers.RACE_STOP)
    settling = TimingPlan(warmup=1, trials=100, settle=SETTLE, early_warmup=False, race=True)
    assert settling.ends_at(21, 20, timers.SETTLED_STOP) and not settling.ends_at(22, 21, timers.SETTLED_STOP)
    assert settling.ends_at(11, 10, timers.SETTLED_STOP)  # a long call settles from its 10th trial
    assert not settling.ends_at(21, 19, timers.SETTLED_STOP)
    assert settling.ends_at(3, 1, timers.RACE_STOP) and not settling.ends_at(3, 2, "")
    assert GPU.ends_at(107, 100, "") and not GPU.ends_at(107, 99, "")  # a GPU's warm-up may end early


def test_passed_secret_calls_are_checked_in_their_own_slots() -> None:
    """A counter that jumps past a secret call has that call checked too, where its slot still holds it."""
    from kernelevolve.eval.timed_checks import OutputCheck

    check = OutputCheck(None, lambda _: [], [], [], list(range(6)), [[]] * 6, 0.0, 0.0, 1, 0)
    seen: list[int] = []
    check.check_call = seen.append  # type: ignore[method-assign]
    passed = [1, 2, 4]
    check.check_passed(passed, 5)  # calls 0..4 done: 1, 2 and 4 are final in a ring of six
    assert seen == [1, 2, 4] and passed == []
    seen.clear()
    check.check_passed([0, 5], 6)  # all six done: no call writes slot 0 again
    assert seen == [0, 5]
    two = OutputCheck(None, lambda _: [], [], [], list(range(6)), [[]] * 2, 0.0, 0.0, 1, 0)
    two.check_call = seen.append  # type: ignore[method-assign]
    seen.clear()
    two.check_passed([2, 3, 4], 5)  # a ring of two on a GPU: only the last finished call is surely final
    assert seen == [4]


def test_a_median_forged_by_skipped_calls_is_caught(
    cpu_platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CPU platform's timing (1 warm-up call, 5 trials, each checked at 1/2): the hack skips its work on
    three trials, enough to make the median one of them. With the draws seeded to miss those three (seed 13:
    calls 0, 4 and 5, one run in eight draws as much), the median's own call is checked once the timing
    ends, and it is one of the skipped."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    plan = TimingPlan(warmup=1, trials=5, settle=None, early_warmup=False)
    assert secret_calls(plan, random.Random(13)) == [0, 4, 5]
    _skipped_calls_fastest(monkeypatch)
    monkeypatch.setattr(check_schedule, "chooser", lambda: random.Random(13))
    monkeypatch.setattr(
        test_hacks, "SETTINGS", replace(test_hacks.SETTINGS, timing_trials=5, warmup_trials=1)
    )
    case = next(c for c in load_cases("hacks") if c.name == "skip_most_timed_calls_forge_median")
    report = evaluate(test_hacks.request_for(case, cpu_platform), cpu_platform)
    assert (report.status, report.error_name) == (Status.INCORRECT, "timed_output_mismatch"), report.feedback
    # Caught on a skipped call: the median's own (at the timing's end) where the judge froze the runner on
    # the drawn calls; on a loaded host the runner may have finished a skipped call before a freeze landed,
    # and the latest finished call is the one checked there (seen once in CI with two test workers).
    assert re.search(r"timed call [123]\b", report.feedback), report.feedback


def _skipped_calls_fastest(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forging hack's premise without a loaded host's noise: its skipped calls (trials 1-3, calls 1-3)
    have its fastest samples, so the median is call 3's. The judge's samples keep their values, reordered."""
    from kernelevolve.eval import judged_run
    from kernelevolve.types import TimingStats

    measured = judged_run._stats

    def reordered(*args: Any, **kwargs: Any) -> tuple[TimingStats, list[float]]:
        stats, samples = measured(*args, **kwargs)
        samples = sorted(samples)
        ranked = TimingStats.from_samples(samples, stats.method)
        return replace(ranked, host_ms=stats.host_ms, stopped_by=stats.stopped_by), samples

    monkeypatch.setattr(judged_run, "_stats", reordered)


def test_the_median_calls_are_those_still_in_the_ring() -> None:
    """The middle sample's call (odd count) or the two middle ones (even), counted past the warm-up calls,
    checked where no later call wrote their slot."""
    from kernelevolve.eval.timed_checks import OutputCheck, median_calls

    assert median_calls([5.0, 1.0, 1.0, 9.0, 1.2], 6) == [5]  # samples of calls 1-5: 1.0, 1.0, 1.2, 5.0, 9.0
    assert median_calls([3.0, 1.0, 2.0, 4.0], 7) == [5, 3]  # calls 3-6: 2.0 (call 5) and 3.0 (call 3)
    seen: list[int] = []
    six = OutputCheck(None, lambda _: [], [], [], list(range(6)), [[]] * 6, 0.0, 0.0, 1, 0)
    six.check_call = lambda call, note="": seen.append(call)  # type: ignore[method-assign]
    six.check_median(six.median_unchecked([5.0, 1.0, 1.0, 9.0, 1.2], 6))
    assert seen == [5]
    six.checked.append(5)  # a secret check already saw it: nothing left, and no stop for it
    assert six.median_unchecked([5.0, 1.0, 1.0, 9.0, 1.2], 6) == []
    seen.clear()
    two = OutputCheck(None, lambda _: [], [], [], list(range(6)), [[]] * 2, 0.0, 0.0, 1, 0)
    two.check_call = lambda call, note="": seen.append(call)  # type: ignore[method-assign]
    two.check_median(
        two.median_unchecked([1.0, 5.0, 9.0, 9.0, 9.0], 6)
    )  # call 2's slot was written again by call 4
    assert seen == []
    two.check_median(two.median_unchecked([9.0, 9.0, 1.0, 5.0, 1.0], 6))  # calls 4 and 5 are the last two
    assert seen == [4]


def test_a_median_past_the_ring_is_the_checked_calls_median() -> None:
    """Where a median call's slot was written again, the reported median is at least the checked calls'."""
    from kernelevolve.eval.timed_checks import OutputCheck

    two = OutputCheck(None, lambda _: [], [], [], list(range(6)), [[]] * 2, 0.0, 0.0, 1, 0)
    samples = [1.0, 1.0, 1.0, 5.0, 6.0]  # calls 1-5: the median is call 3's, skipped work, not checked
    two.checked.extend([0, 4, 5])  # the warm-up call is checked but not sampled
    assert two.checked_median(samples, 6) == 5.5
    two.checked.append(3)
    assert two.checked_median(samples, 6) is None  # every median call checked: the median stands


def test_a_median_forged_past_the_ring_reports_the_work_time(
    cpu_platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forged median of `test_a_median_forged_by_skipped_calls_is_caught` with a ring of two slots (a
    GPU's outputs past the ring's budget): the skipped median call is out of reach, so the run passes, at
    the checked calls' time rather than the skipped calls'."""
    from kernelevolve.eval import judged_run

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(check_schedule, "chooser", lambda: random.Random(13))
    monkeypatch.setitem(judged_run.RING_BUDGET_BYTES, "cpu", 1)
    _skipped_calls_fastest(monkeypatch)
    monkeypatch.setattr(
        test_hacks, "SETTINGS", replace(test_hacks.SETTINGS, timing_trials=5, warmup_trials=1)
    )
    case = next(c for c in load_cases("hacks") if c.name == "skip_most_timed_calls_forge_median")
    report = evaluate(test_hacks.request_for(case, cpu_platform), cpu_platform)
    assert report.status is Status.OK, report.feedback
    assert all(stats.median_from_checked_calls for stats in report.latency.values())
