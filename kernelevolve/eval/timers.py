"""Latency of a callable: CUDA events on GPUs, wall clock on the CPU.

The clock functions are bound by `bind_clocks()` before any candidate module is imported, so a
candidate that patches `torch.cuda.Event.elapsed_time` or `time.perf_counter` cannot change what
we measure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kernelevolve.types import TimingStats

MIN_FLUSH_BYTES = 256 << 20
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


InputSource = Sequence[Sequence[Any]] | Callable[[int], Sequence[Any]]


@dataclass(frozen=True)
class Race:
    """Stop timing a clear loser early: after `after_trials` calls, if their median is above this."""

    give_up_above_ms: float
    after_trials: int

    def lost(self, samples_ms: list[float]) -> bool:
        """Decided once, at exactly `after_trials` samples (the timing loop asks after every call)."""
        if len(samples_ms) != self.after_trials:
            return False
        return sorted(samples_ms)[self.after_trials // 2] > self.give_up_above_ms


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
) -> TimingStats:
    """Median/mean/std over `trials` calls after `warmup` calls.

    `input_sets` is either pre-made input sets that the calls rotate through, or a function
    returning the inputs of call number i (warm-up calls first), so that every call can get fresh
    contents and no result cache keyed by the inputs can skip the work. With `race`, timing stops
    after `race.after_trials` calls if their median is already above `race.give_up_above_ms`.
    """
    if not callable(input_sets) and not input_sets:
        raise ValueError("time_callable needs at least one input set")
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    bind_clocks()
    import torch

    inputs_for = input_getter(input_sets)
    with torch.no_grad():
        if torch.device(device).type == "cuda":
            flush_bytes = max(2 * l2_bytes, MIN_FLUSH_BYTES) if flush_l2 else 0
            samples, host = _time_cuda(
                fn, inputs_for, torch.device(device), trials, warmup, flush_bytes, launch_cover_us, race
            )
            return TimingStats.from_samples(samples, "cuda_event", host)
        return TimingStats.from_samples(_time_wall(fn, inputs_for, trials, warmup, race), "wall")


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
    race: Race | None = None,
) -> tuple[list[float], list[float]]:
    """(GPU ms per call from CUDA events, host ms to issue each call)."""
    import torch

    synchronize = _clocks["synchronize"]
    event, record, elapsed = _clocks["event"], _clocks["record"], _clocks["elapsed_time"]
    clock = _clocks["perf_counter"]
    flush = torch.empty(flush_bytes, dtype=torch.uint8, device=device) if flush_bytes else None
    warm_host: list[float] = []
    for i in range(warmup):
        inputs = inputs_for(i)
        issued = clock()
        fn(*inputs)
        warm_host.append(1e6 * (clock() - issued))
        synchronize(device)  # each warm-up call issued onto an idle GPU: its host time is all host
    cover_us = cover_for(launch_cover_us, warm_host[1:] or warm_host)
    cover_cycles = int(cover_us * sleep_cycles_per_us(device)) if cover_us > 0 else 0
    starts = [event(enable_timing=True) for _ in range(trials)]
    ends = [event(enable_timing=True) for _ in range(trials)]
    host: list[float] = []
    for i in range(trials):
        inputs = inputs_for(warmup + i)
        if flush is not None:
            flush.zero_()  # evict the previous trial's lines (and freshly made inputs) from L2
        if cover_cycles:
            torch.cuda._sleep(cover_cycles)  # the GPU waits here while the host issues the call
        record(starts[i])
        issued = clock()
        fn(*inputs)
        host.append(1e3 * (clock() - issued))
        record(ends[i])
        if race is not None and i + 1 == race.after_trials:
            synchronize(device)
            so_far = [float(elapsed(starts[k], ends[k])) for k in range(i + 1)]
            if race.lost(so_far):
                return so_far, host
    synchronize(device)
    samples = [float(elapsed(start, end)) for start, end in zip(starts, ends, strict=True)]
    return samples, host


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
    race: Race | None = None,
) -> list[float]:
    clock = _clocks.get("perf_counter", _perf_counter)
    for i in range(warmup):
        fn(*inputs_for(i))
    samples = []
    for i in range(trials):
        inputs = inputs_for(warmup + i)
        start = clock()
        fn(*inputs)
        samples.append(1e3 * (clock() - start))
        if race is not None and race.lost(samples):
            break
    return samples
