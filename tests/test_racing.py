"""Racing: a clear loser's timing stops early, only against the best kernel of its own kind. Settling:
a candidate's timing stops once its median is known well enough, and is not flagged for it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from kernelevolve.eval import harness, timers
from kernelevolve.eval.timers import CUT_SHORT_FLAG
from kernelevolve.platforms import Platform
from kernelevolve.search.engine import incumbent_ms
from kernelevolve.search.graph import SearchGraph
from kernelevolve.types import (
    Candidate,
    EvalReport,
    EvalRequest,
    EvalSettings,
    FitnessValue,
    KernelSpec,
    ShapeCase,
    Status,
    TimingStats,
)

SETTINGS = EvalSettings(
    correctness_trials=1, timing_trials=12, warmup_trials=1, measure_compile_baseline=False, race_min_trials=3
)


def _slow_call(*_: object) -> None:
    time.sleep(0.002)


def _timed_slow_call(give_up_above_ms: float) -> TimingStats:
    race = timers.Race(give_up_above_ms=give_up_above_ms, after_trials=3)
    return timers.time_callable(
        _slow_call, [[]], "cpu", trials=12, warmup=1, flush_l2=False, l2_bytes=0, race=race
    )


def test_timer_gives_up_on_a_loser_after_the_race_trials() -> None:
    lost = _timed_slow_call(give_up_above_ms=1.0)
    assert lost.trials == 3 and lost.median_ms > 1.0
    assert _timed_slow_call(give_up_above_ms=100.0).trials == 12


def _request(
    candidate: Candidate, spec: KernelSpec, platform: Platform, incumbent: float | None
) -> EvalRequest:
    return EvalRequest(candidate, spec, platform.name, SETTINGS, incumbent)


def test_harness_races_one_shape_specs_only(
    add_kernel: Callable[..., str],
    add_spec: KernelSpec,
    cpu_platform: Platform,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    candidate = Candidate(add_kernel(), "triton", "t")
    one_shape = replace(add_spec, shapes=add_spec.shapes[:1])
    raced = harness.evaluate(_request(candidate, one_shape, cpu_platform, 1e-9), cpu_platform)
    assert raced.status is Status.OK and CUT_SHORT_FLAG in raced.flags
    assert [t.trials for t in raced.latency.values()] == [3]
    full = harness.evaluate(_request(candidate, one_shape, cpu_platform, None), cpu_platform)
    assert CUT_SHORT_FLAG not in full.flags and [t.trials for t in full.latency.values()] == [12]
    two_shapes = harness.evaluate(_request(candidate, add_spec, cpu_platform, 1e-9), cpu_platform)
    assert CUT_SHORT_FLAG not in two_shapes.flags and {t.trials for t in two_shapes.latency.values()} == {12}
    off = EvalRequest(candidate, one_shape, cpu_platform.name, replace(SETTINGS, race_margin=0.0), 1e-9)
    assert CUT_SHORT_FLAG not in harness.evaluate(off, cpu_platform).flags


def _node(graph: SearchGraph, candidate: Candidate, ms: float, flags: tuple[str, ...] = ()) -> None:
    graph.add_candidate(candidate)
    latency = {"default": TimingStats.from_samples([ms], "cuda_event")}
    report = EvalReport(candidate_id=candidate.id, status=Status.OK, latency=latency, flags=flags)
    graph.record(candidate.id, report, FitnessValue(True, 1.0 / ms))


def test_incumbent_is_the_best_fully_timed_kernel_of_the_same_kind(
    add_kernel: Callable[..., str], library_kernel: Callable[[], str]
) -> None:
    spec = KernelSpec(
        name="one", reference_source="", shapes=(ShapeCase("default"),), backends=("triton", "cute")
    )
    own = [Candidate(add_kernel() + f"\n# variant {k}\n", "triton", "t") for k in range(3)]
    library = Candidate(library_kernel(), "triton", "t")
    graph = SearchGraph()
    assert incumbent_ms(graph, spec, own[0]) is None  # nothing timed yet
    _node(graph, library, 0.5)  # fastest overall, but it calls cuBLAS: not what own kernels race
    _node(graph, own[0], 2.0)
    _node(graph, own[1], 1.0, flags=(CUT_SHORT_FLAG,))  # cut short: never an incumbent
    assert incumbent_ms(graph, spec, own[2]) == 2.0
    assert incumbent_ms(graph, spec, library) == 0.5
    assert incumbent_ms(graph, spec, replace(own[2], backend="cute")) is None
    assert incumbent_ms(graph, replace(spec, shapes=(ShapeCase("a"), ShapeCase("b"))), own[2]) is None


def test_requests_carry_the_incumbent_through_json(
    add_kernel: Callable[..., str], add_spec: KernelSpec
) -> None:
    request = EvalRequest(Candidate(add_kernel(), "triton", "t"), add_spec, "cpu", SETTINGS, 0.25)
    assert EvalRequest.from_json(request.to_json()) == request


def test_settling_stops_once_the_medians_confidence_interval_is_narrow() -> None:
    settle = timers.Settle(min_trials=30, relative_halfwidth=0.01)
    assert (
        not settle.checks_at(29)
        and settle.checks_at(30)
        and not settle.checks_at(35)
        and settle.checks_at(40)
    )
    steady = [1.0 + 0.001 * (k % 7) for k in range(30)]
    noisy = [1.0 + 0.5 * (k % 2) for k in range(30)]
    assert settle.stops(steady) and not settle.stops(noisy)
    # a few outliers beyond the interval's order statistics do not hold it open
    assert settle.stops([*steady[:26], 9.0, 9.0, 0.1, 0.1])


def _steady_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = iter(range(10_000))
    timers.bind_clocks()
    monkeypatch.setitem(timers._clocks, "perf_counter", lambda: next(ticks) * 1e-3)  # every call 1 ms


def test_a_steady_kernel_settles_after_the_minimum_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    _steady_clock(monkeypatch)
    settle = timers.Settle(min_trials=30, relative_halfwidth=0.01)
    stats = timers.time_callable(
        lambda: None, [[]], "cpu", trials=100, warmup=1, flush_l2=False, l2_bytes=0, settle=settle
    )
    assert (stats.trials, stats.stopped_by) == (30, timers.SETTLED_STOP) and stats.median_ms == pytest.approx(
        1.0
    )
    full = timers.time_callable(lambda: None, [[]], "cpu", trials=100, warmup=1, flush_l2=False, l2_bytes=0)
    assert (full.trials, full.stopped_by) == (100, "")


def test_harness_settles_candidates_without_flagging_them(
    add_kernel: Callable[..., str],
    add_spec: KernelSpec,
    cpu_platform: Platform,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    one_shape = replace(add_spec, shapes=add_spec.shapes[:1])
    # the candidate is timed in its runner by the real clock: a halfwidth of 1000% settles at the first look
    settling = replace(SETTINGS, timing_trials=60, settle_min_trials=20, settle_relative_halfwidth=10.0)
    candidate = Candidate(add_kernel(), "triton", "t")
    report = harness.evaluate(EvalRequest(candidate, one_shape, cpu_platform.name, settling), cpu_platform)
    assert report.status is Status.OK and CUT_SHORT_FLAG not in report.flags
    assert [(t.trials, t.stopped_by) for t in report.latency.values()] == [(20, timers.SETTLED_STOP)]
    raced = harness.evaluate(
        EvalRequest(candidate, one_shape, cpu_platform.name, settling, 1e-9), cpu_platform
    )
    assert CUT_SHORT_FLAG in raced.flags  # racing still decides first, at its 3 trials
    assert [(t.trials, t.stopped_by) for t in raced.latency.values()] == [(3, timers.RACE_STOP)]


@pytest.mark.gpu
def test_cuda_timing_settles_on_a_steady_kernel() -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    a = torch.randn(2048, 2048, device="cuda")
    settle = timers.Settle(min_trials=30, relative_halfwidth=0.02)
    stats = timers.time_callable(
        torch.mm, [[a, a]], "cuda", trials=100, warmup=5, flush_l2=True, l2_bytes=50 << 20, settle=settle
    )
    assert stats.method == "cuda_event" and stats.stopped_by == timers.SETTLED_STOP and stats.trials < 100


@pytest.mark.gpu
def test_cuda_timing_gives_a_gross_loser_up_in_warm_up() -> None:
    """A 20 ms busy-wait against a race threshold of 1 ms: three warm-up calls, no timed ones."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    timers.bind_clocks()
    cycles = int(20_000 * timers.sleep_cycles_per_us(torch.device("cuda")))
    race = timers.Race(give_up_above_ms=1.0, after_trials=10)
    stats = timers.time_callable(
        lambda: torch.cuda._sleep(cycles),
        [[]],
        "cuda",
        trials=100,
        warmup=10,
        flush_l2=False,
        l2_bytes=0,
        race=race,
    )
    assert (stats.trials, stats.stopped_by) == (2, timers.RACE_STOP) and stats.median_ms > 10.0


class _FakeGpuClocks:
    """`timers._clocks` for `_time_cuda` without a GPU: each call of the timed function takes `call_ms`
    of a simulated clock, and events read it."""

    def __init__(self, call_ms: float) -> None:
        self.now_s, self.call_ms, self.calls = 0.0, call_ms, 0

    def run(self, *_: object) -> None:
        self.calls += 1
        self.now_s += self.call_ms / 1e3

    def clocks(self) -> dict[str, Callable[..., object]]:
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = True) -> None:
                self.at_s = 0.0

        def record(event: Event) -> None:
            event.at_s = fake.now_s

        return {
            "perf_counter": lambda: fake.now_s,
            "synchronize": lambda device=None: None,
            "event": Event,
            "record": record,
            "elapsed_time": lambda start, end: 1e3 * (end.at_s - start.at_s),
        }


@pytest.mark.parametrize(("call_ms", "warm_calls"), [(30.0, 3), (10.0, 6), (1.0, 10)])
def test_warm_up_ends_once_enough_time_has_run(
    monkeypatch: pytest.MonkeyPatch, call_ms: float, warm_calls: int
) -> None:
    fake = _FakeGpuClocks(call_ms)
    monkeypatch.setattr(timers, "_clocks", fake.clocks())
    samples, _, _ = timers._time_cuda(
        fake.run, lambda call: [], "cuda", 5, 10, 0, 0.0, (), warmup_enough_ms=50.0
    )
    assert len(samples) == 5 and fake.calls == warm_calls + 5  # 30 ms: 2 after the first make 50 ms
    assert all(s == pytest.approx(call_ms) for s in samples)
    fake.calls = 0
    timers._time_cuda(fake.run, lambda call: [], "cuda", 5, 10, 0, 0.0, (), warmup_enough_ms=0.0)
    assert fake.calls == 15  # off: every warm-up call


@pytest.mark.parametrize(("call_ms", "timed"), [(30.0, 10), (12.0, 10), (1.0, 30)])
def test_long_calls_settle_from_ten_timed_calls(
    monkeypatch: pytest.MonkeyPatch, call_ms: float, timed: int
) -> None:
    """Steady calls settle at the first check: from 10 timed calls where the warm-up's calls took 10 ms or
    more, from 30 otherwise; race and settle rules see the warm-up's estimate of a call."""
    fake = _FakeGpuClocks(call_ms)
    monkeypatch.setattr(timers, "_clocks", fake.clocks())
    settle = timers.Settle(min_trials=30, relative_halfwidth=0.01, long_call_ms=10.0)
    samples, _, stopped_by = timers._time_cuda(
        fake.run, lambda call: [], "cuda", 100, 10, 0, 0.0, [settle], 50.0
    )
    assert (len(samples), stopped_by) == (timed, timers.SETTLED_STOP)


@pytest.mark.parametrize(
    ("call_ms", "best_ms", "calls", "stopped_by"),
    [(80.0, 1.0, 3, timers.RACE_STOP), (2.9, 1.0, 5 + 10, timers.RACE_STOP), (2.0, 2.0, 5 + 20, "")],
)
def test_a_gross_loser_stops_in_warm_up(
    monkeypatch: pytest.MonkeyPatch, call_ms: float, best_ms: float, calls: int, stopped_by: str
) -> None:
    """At a race margin of 1.5: 80 ms calls against a best of 1 ms stop after three warm-up calls, their
    samples the two after the first; 2.9 ms calls (under 2 x 1.5 ms) go on to the race at ten timed calls;
    2 ms calls against a best of 2 ms are timed in full. (The host issues each call in 0.05 ms.)"""
    fake = _HostAndGpuClocks(call_ms, host_ms=0.05)
    monkeypatch.setattr(timers, "_clocks", fake.clocks())
    race = timers.Race(give_up_above_ms=1.5 * best_ms, after_trials=10)
    samples, host, got = timers._time_cuda(fake.run, lambda call: [], "cuda", 20, 5, 0, 0.0, [race], 0.0)
    assert (fake.calls, got) == (calls, stopped_by)
    if call_ms == 80.0:
        assert samples == [pytest.approx(80.0)] * 2 and len(host) == 2


class _HostAndGpuClocks(_FakeGpuClocks):
    """Each call: the host issues for `host_ms` while the GPU runs `call_ms` in all (events span both)."""

    def __init__(self, call_ms: float, host_ms: float) -> None:
        super().__init__(call_ms)
        self.host_ms = host_ms

    def run(self, *_: object) -> None:
        self.calls += 1
        self.now_s += self.host_ms / 1e3
        self.pending_s = (self.call_ms - self.host_ms) / 1e3

    def clocks(self) -> dict[str, Callable[..., object]]:
        clocks = super().clocks()
        fake = self

        def record(event: Any) -> None:
            fake.now_s += getattr(fake, "pending_s", 0.0)  # an end event waits for the GPU
            fake.pending_s = 0.0
            event.at_s = fake.now_s

        return {**clocks, "record": record}


def test_a_host_bound_call_is_not_given_up_in_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Warm-up calls have no busy-wait cover, so their events span the host's issuing: a network whose
    9 ms calls are 8.9 ms of issuing is not given up against a best of 1 ms (its replay may still win);
    the same 9 ms of GPU work issued in 0.1 ms is."""
    race = timers.Race(give_up_above_ms=1.5, after_trials=10)
    for host_ms, expected in ((8.9, 5 + 10), (0.1, 3)):
        fake = _HostAndGpuClocks(9.0, host_ms)
        monkeypatch.setattr(timers, "_clocks", fake.clocks())
        _, _, stopped_by = timers._time_cuda(fake.run, lambda call: [], "cuda", 20, 5, 0, 0.0, [race], 0.0)
        assert (fake.calls, stopped_by) == (expected, timers.RACE_STOP)


def test_warm_up_racing_needs_two_calls_after_the_first_and_can_be_off() -> None:
    race = timers.Race(give_up_above_ms=1.0, after_trials=10)
    assert not race.gives_up_in_warmup([50.0])  # one call: a hiccup is not a verdict
    assert race.gives_up_in_warmup([50.0, 40.0]) and not race.gives_up_in_warmup([50.0, 1.9])
    assert not timers.Race(1.0, 10, warmup_factor=0.0).gives_up_in_warmup([50.0, 40.0])
    assert not timers.Settle(30, 0.01).gives_up_in_warmup([50.0, 40.0])


def test_on_the_cpu_a_gross_loser_stops_in_warm_up_too() -> None:
    race = timers.Race(give_up_above_ms=0.5, after_trials=3, warmup_factor=2.0)
    stats = timers.time_callable(
        _slow_call, [[]], "cpu", trials=12, warmup=4, flush_l2=False, l2_bytes=0, race=race
    )
    assert (stats.trials, stats.stopped_by) == (2, timers.RACE_STOP) and stats.median_ms > 1.0


def test_settle_for_long_calls_only_when_asked() -> None:
    settle = timers.Settle(min_trials=30, relative_halfwidth=0.01, long_call_ms=10.0)
    assert settle.for_call_ms(25.0).min_trials == 10 and settle.for_call_ms(25.0).long_call_ms == 10.0
    assert settle.for_call_ms(5.0) is settle and settle.for_call_ms(None) is settle
    assert timers.Settle(30, 0.01).for_call_ms(25.0).min_trials == 30  # off by default
    assert timers.Settle(5, 0.01, long_call_ms=10.0).for_call_ms(25.0).min_trials == 5  # never later
    race = timers.Race(give_up_above_ms=1.0, after_trials=10)
    assert race.for_call_ms(25.0) is race
