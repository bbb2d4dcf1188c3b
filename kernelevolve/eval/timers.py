"""Latency of a callable: CUDA events on GPUs, wall clock on the CPU.

The clock functions are bound by `bind_clocks()` before any candidate module is imported, so a
candidate that patches `torch.cuda.Event.elapsed_time` or `time.perf_counter` cannot change what
we measure.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kernelevolve.types import TimingStats

MIN_FLUSH_BYTES = 256 << 20
WARMUP_MIN_CALLS = 3  # the first call pays one-off costs (module load, autotune); two more settle it
LONG_CALL_MIN_TRIALS = 10  # where settling may first stop a timing of long calls (`Settle.long_call_ms`)
RACE_STOP = "race"  # TimingStats.stopped_by: a loser given up on (the report is flagged timing_cut_short)
CUT_SHORT_FLAG = "timing_cut_short"  # the report flag of a candidate whose timing a race stopped early
SETTLED_STOP = "settled"  # TimingStats.stopped_by: the median known to the precision asked for
_perf_counter = time.perf_counter
_clocks: dict[str, Callable[..., Any]] = {}


def bind_clocks() -> None:
    """Capture the real event methods now (idempotent); the harness calls this before loading candidates."""
    if _clocks:
        return
    import torch

    _clocks["perf_counter"] = _perf_counter
    _clocks["synchronize"] = torch.cuda.synchronize
    _clocks["event"] = torch.cuda.Event
    _clocks["record"] = torch.cuda.Event.record
    _clocks["elapsed_time"] = torch.cuda.Event.elapsed_time
    _clocks["event_synchronize"] = torch.cuda.Event.synchronize


InputSource = Sequence[Sequence[Any]] | Callable[[int], Sequence[Any]]
ISSUE_AHEAD = 1  # with an observer, call i is issued once call i - 1 and its `after_call` work finished


@dataclass
class CallObserver:
    """What a runner does around the timed calls, outside the timed window: `after_call(n, output)` is
    queued right after call n's end event (its output copied where the judge can check it), and
    `completed(k)` says calls 0..k-1 (warm-up first) and their `after_call` work have finished on the
    device. The host then runs at most `ISSUE_AHEAD` calls ahead of the device, so the judge, freezing
    the runner at any moment, knows which copies are final (the wait falls outside the timed windows)."""

    after_call: Callable[[int, Any], None]
    completed: Callable[[int], None]
    cover_us: float = 0.0  # the launch cover queued before each timed call (GPU)
    samples_ms: list[float] = dataclasses.field(default_factory=list)  # the timed calls, when done
    host_ms: list[float] = dataclasses.field(default_factory=list)
    # Wall clock (CPU): each timed call's window, (start, end) on the bound perf_counter. The judge takes
    # out the time it held this process stopped within them (`call_windows`): the runner is not told it.
    windows_s: list[tuple[float, float]] = dataclasses.field(default_factory=list)


@dataclass(frozen=True)
class Race:
    """Stop timing a clear loser early: after `after_trials` calls, if their median is above this.

    A gross loser stops in warm-up already: once the warm-up calls after the first (which pays one-off
    costs), `WARMUP_MIN_CALLS - 1` of them at least, each took over `warmup_factor` x the threshold beyond
    the host's time to issue it. On the H200 two L1/5 candidates of 80 and 323 ms (the best: 2 ms) held
    the GPU 5.3 s for ten timed calls and three warm-up calls; stopped after three calls, 1.1 s."""

    give_up_above_ms: float
    after_trials: int
    warmup_factor: float = 2.0
    name = RACE_STOP

    def checks_at(self, trials: int) -> bool:
        return trials == self.after_trials

    def stops(self, samples_ms: list[float]) -> bool:
        """Decided once, at exactly `after_trials` samples."""
        return sorted(samples_ms)[self.after_trials // 2] > self.give_up_above_ms

    def gives_up_in_warmup(self, warm_ms_after_first: list[float]) -> bool:
        if self.warmup_factor <= 0 or len(warm_ms_after_first) < WARMUP_MIN_CALLS - 1:
            return False
        return min(warm_ms_after_first) > self.warmup_factor * self.give_up_above_ms

    def for_call_ms(self, call_ms: float | None) -> Race:
        return self


@dataclass(frozen=True)
class Settle:
    """Stop timing once the median is known well enough: every `every` calls from `min_trials` on, if the
    95% confidence interval of the median (order statistics, no assumption about the distribution) is
    within +-`relative_halfwidth` of it. A kernel timed steadily needs 20 or 30 calls, not 100, to be ranked.
    Calls of at least `long_call_ms` (0: off) are checked from `LONG_CALL_MIN_TRIALS` on: ten calls of a
    30 ms kernel are 0.3 s of samples, and the interval decides as it does at 30."""

    min_trials: int
    relative_halfwidth: float
    every: int = 10
    long_call_ms: float = 0.0
    name = SETTLED_STOP

    def for_call_ms(self, call_ms: float | None) -> Settle:
        """This rule for calls of about `call_ms` each (None: not known)."""
        if self.long_call_ms <= 0 or call_ms is None or call_ms < self.long_call_ms:
            return self
        return dataclasses.replace(self, min_trials=min(self.min_trials, LONG_CALL_MIN_TRIALS))

    def checks_at(self, trials: int) -> bool:
        return trials >= self.min_trials and (trials - self.min_trials) % self.every == 0

    def gives_up_in_warmup(self, warm_ms_after_first: list[float]) -> bool:
        return False  # warm-up calls are not samples of the settled median

    def stops(self, samples_ms: list[float]) -> bool:
        ordered = sorted(samples_ms)
        n = len(ordered)
        reach = math.ceil(1.96 * math.sqrt(n) / 2)
        low, high = ordered[max(0, n // 2 - reach)], ordered[min(n - 1, n // 2 + reach)]
        return (high - low) / 2 <= self.relative_halfwidth * ordered[n // 2]


class StopRule(Protocol):
    name: str

    def checks_at(self, trials: int) -> bool: ...

    def stops(self, samples_ms: list[float]) -> bool: ...

    def gives_up_in_warmup(self, warm_ms_after_first: list[float]) -> bool: ...

    def for_call_ms(self, call_ms: float | None) -> StopRule: ...


def _stopped_by(rules: Sequence[StopRule], samples_ms: list[float]) -> str:
    """The first rule that, asked at this many samples, ends the timing ("" where none does)."""
    return next((r.name for r in rules if r.checks_at(len(samples_ms)) and r.stops(samples_ms)), "")


def _given_up_in_warmup(rules: Sequence[StopRule], warm_ms_after_first: list[float]) -> str:
    """The first rule that ends the timing during warm-up ("" where none does)."""
    return next((r.name for r in rules if r.gives_up_in_warmup(warm_ms_after_first)), "")


def time_callable(
    fn: Callable[..., Any],
    input_sets: InputSource,
    device: str,
    trials: int,
    warmup: int,
    flush_l2: bool,
    l2_bytes: int,
    launch_cover_us: float = 0.0,
    race: Race | None = None,
    settle: Settle | None = None,
    warmup_enough_ms: float = 0.0,
    observer: CallObserver | None = None,
) -> TimingStats:
    """Median/mean/std over `trials` calls after `warmup` calls.

    `input_sets` is either pre-made input sets that the calls rotate through, or a function
    returning the inputs of call number i (warm-up calls first), so that every call can get fresh
    contents and no result cache keyed by the inputs can skip the work. With `race`, timing stops
    after `race.after_trials` calls if their median is already above `race.give_up_above_ms` (a gross
    loser's in warm-up: its samples are then the warm-up calls after the first); with
    `settle`, once the median is known to its precision. `stopped_by` names the rule that stopped it.
    On GPUs, warm-up ends early once `WARMUP_MIN_CALLS` calls are done and those after the first took
    `warmup_enough_ms` in all (0: always `warmup` calls): a 30 ms kernel gets three, not ten.
    """
    if not callable(input_sets) and not input_sets:
        raise ValueError("time_callable needs at least one input set")
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    bind_clocks()
    import torch

    inputs_for = input_getter(input_sets)
    rules = [rule for rule in (race, settle) if rule is not None]
    with torch.no_grad():
        if torch.device(device).type == "cuda":
            flush_bytes = max(2 * l2_bytes, MIN_FLUSH_BYTES) if flush_l2 else 0
            samples, host, stopped_by = _time_cuda(
                fn,
                inputs_for,
                torch.device(device),
                trials,
                warmup,
                flush_bytes,
                launch_cover_us,
                rules,
                warmup_enough_ms,
                observer,
            )
            if observer is not None:
                observer.samples_ms, observer.host_ms = list(samples), list(host)
            return dataclasses.replace(
                TimingStats.from_samples(samples, "cuda_event", host), stopped_by=stopped_by
            )
        samples, stopped_by = _time_wall(fn, inputs_for, trials, warmup, rules, observer)
        if observer is not None:
            observer.samples_ms = list(samples)
        return dataclasses.replace(TimingStats.from_samples(samples, "wall"), stopped_by=stopped_by)


def input_getter(input_sets: InputSource) -> Callable[[int], Sequence[Any]]:
    if callable(input_sets):
        return input_sets
    sets = list(input_sets)
    return lambda call: sets[call % len(sets)]


def _time_cuda(
    fn: Callable[..., Any],
    inputs_for: Callable[[int], Sequence[Any]],
    device: Any,
    trials: int,
    warmup: int,
    flush_bytes: int,
    launch_cover_us: float,
    rules: Sequence[StopRule] = (),
    warmup_enough_ms: float = 0.0,
    observer: CallObserver | None = None,
) -> tuple[list[float], list[float], str]:
    """(GPU ms per call from CUDA events, host ms to issue each call, the rule that stopped it or "")."""
    import torch

    synchronize = _clocks["synchronize"]
    event, record, elapsed = _clocks["event"], _clocks["record"], _clocks["elapsed_time"]
    clock = _clocks["perf_counter"]
    flush = torch.empty(flush_bytes, dtype=torch.uint8, device=device) if flush_bytes else None
    warm_host: list[float] = []
    warm_ms_after_first = 0.0
    warm_gpu_ms: list[float] = []  # the warm-up calls after the first, by CUDA events: racing reads them
    for i in range(warmup):
        inputs = inputs_for(i)
        start, end = event(enable_timing=True), event(enable_timing=True)
        record(start)
        issued = clock()
        output = fn(*inputs)
        warm_host.append(1e6 * (clock() - issued))
        record(end)
        if observer is not None:
            observer.after_call(i, output)
        synchronize(device)  # each warm-up call issued onto an idle GPU: its host time is all host
        if observer is not None:
            observer.completed(i + 1)
        if i > 0:
            warm_ms_after_first += 1e3 * (clock() - issued)
            warm_gpu_ms.append(float(elapsed(start, end)))
            # Without the timed calls' busy-wait cover, a warm-up call's events also span the host's
            # issuing; only the time beyond it may give a candidate up (a host-bound network's calls are
            # mostly issue time, and may still win once replayed from a CUDA graph).
            beyond_host = [max(0.0, ms - us / 1e3) for ms, us in zip(warm_gpu_ms, warm_host[1:], strict=True)]
            given_up = _given_up_in_warmup(rules, beyond_host)
            if given_up:
                return warm_gpu_ms, [us / 1e3 for us in warm_host[1:]], given_up
        if warmup_enough_ms > 0 and i + 1 >= WARMUP_MIN_CALLS and warm_ms_after_first >= warmup_enough_ms:
            warmup = i + 1
            break
    # how long a call takes, from the synchronised warm-up calls after the first (None: too few)
    call_ms = warm_ms_after_first / (warmup - 1) if warmup >= 2 else None
    rules = [rule.for_call_ms(call_ms) for rule in rules]
    cover_us = cover_for(launch_cover_us, warm_host[1:] or warm_host)
    if observer is not None:
        observer.cover_us = cover_us
    cover_cycles = int(cover_us * sleep_cycles_per_us(device)) if cover_us > 0 else 0
    starts = [event(enable_timing=True) for _ in range(trials)]
    ends = [event(enable_timing=True) for _ in range(trials)]
    host: list[float] = []
    done = [event() for _ in range(trials)] if observer is not None else []
    wait_done = _clocks.get("event_synchronize", _no_wait)
    for i in range(trials):
        if observer is not None and i >= ISSUE_AHEAD:
            wait_done(done[i - ISSUE_AHEAD])
            observer.completed(warmup + i - ISSUE_AHEAD + 1)
        inputs = inputs_for(warmup + i)
        if flush is not None:
            flush.zero_()  # evict the previous trial's lines (and freshly made inputs) from L2
        if cover_cycles:
            torch.cuda._sleep(cover_cycles)  # the GPU waits here while the host issues the call
        record(starts[i])
        issued = clock()
        output = fn(*inputs)
        host.append(1e3 * (clock() - issued))
        record(ends[i])
        if observer is not None:
            observer.after_call(warmup + i, output)
            record(done[i])
        del output
        if i + 1 < trials and any(rule.checks_at(i + 1) for rule in rules):
            synchronize(device)  # a rule reads the samples so far: the GPU idles here for a moment
            if observer is not None:
                observer.completed(warmup + i + 1)
            so_far = [float(elapsed(starts[k], ends[k])) for k in range(i + 1)]
            stopped_by = _stopped_by(rules, so_far)
            if stopped_by:
                return so_far, host, stopped_by
    synchronize(device)
    if observer is not None:
        observer.completed(warmup + trials)
    samples = [float(elapsed(start, end)) for start, end in zip(starts, ends, strict=True)]
    return samples, host, ""


def _no_wait(event: Any) -> None:
    """For clocks bound without an event wait (tests' fakes): nothing to wait for."""


MAX_COVER_US = 2000.0


def cover_for(floor_us: float, warm_host_us: list[float]) -> float:
    """GPU wait queued before each timed call: at least `floor_us`, and 3x the host's median issue
    time seen in warm-up, so a slow first-in-process launch path cannot leak into the GPU time.
    Capped: a call whose host side takes milliseconds really is that slow, and is measured so."""
    if floor_us <= 0:
        return 0.0
    ordered = sorted(warm_host_us)
    median = ordered[len(ordered) // 2] if ordered else 0.0
    return min(max(floor_us, 3.0 * median), MAX_COVER_US)


_sleep_rates: dict[str, float] = {}


def sleep_cycles_per_us(device: Any) -> float:
    """How many `torch.cuda._sleep` cycles make a microsecond on `device` (measured once per process)."""
    import torch

    key = str(device)
    if key not in _sleep_rates:
        synchronize, event, record, elapsed = (
            _clocks["synchronize"],
            _clocks["event"],
            _clocks["record"],
            _clocks["elapsed_time"],
        )
        cycles = 2_000_000
        torch.cuda._sleep(cycles // 10)  # warm the sleep kernel
        start, end = event(enable_timing=True), event(enable_timing=True)
        record(start)
        torch.cuda._sleep(cycles)
        record(end)
        synchronize(device)
        micros = max(float(elapsed(start, end)) * 1e3, 1.0)
        _sleep_rates[key] = cycles / micros
    return _sleep_rates[key]


def _time_wall(
    fn: Callable[..., Any],
    inputs_for: Callable[[int], Sequence[Any]],
    trials: int,
    warmup: int,
    rules: Sequence[StopRule] = (),
    observer: CallObserver | None = None,
) -> tuple[list[float], str]:
    """Wall-clock samples. A judge that stops this process to check an output lengthens the window it
    falls in; the judge takes its stops out of the windows it is handed (`observer.windows_s`), while the
    stop rules here see the windows as they are (one stretched call barely moves a median)."""
    clock = _clocks.get("perf_counter", _perf_counter)
    warm_ms: list[float] = []
    windows: list[tuple[float, float]] = observer.windows_s if observer is not None else []

    def observe(call: int, output: Any) -> None:
        if observer is not None:
            observer.after_call(call, output)
            observer.completed(call + 1)

    warm_windows: list[tuple[float, float]] = []
    for i in range(warmup):
        inputs = inputs_for(i)
        start = clock()
        output = fn(*inputs)
        end = clock()
        observe(i, output)
        if i > 0:
            warm_ms.append(1e3 * (end - start))
            warm_windows.append((start, end))
            given_up = _given_up_in_warmup(rules, warm_ms)
            if given_up:  # the warm-up calls after the first are the samples
                windows[:] = warm_windows
                return warm_ms, given_up
    samples: list[float] = []
    for i in range(trials):
        inputs = inputs_for(warmup + i)
        start = clock()
        output = fn(*inputs)
        end = clock()
        samples.append(1e3 * (end - start))
        windows.append((start, end))
        observe(warmup + i, output)
        stopped_by = _stopped_by(rules, samples) if i + 1 < trials else ""
        if stopped_by:
            return samples, stopped_by
    return samples, ""
