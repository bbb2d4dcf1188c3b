"""A runner's wall-clock call times with the judge's own pauses taken out, by the judge (CPU timing).

The judge stops the runner (SIGSTOP) to check a timed call's output, and a stop that falls inside a
call's timed window is not the call's time. The runner used to subtract a pause clock the judge wrote
into shared memory; any code in the runner can write that memory by path, so a candidate added to it
and was timed faster than it ran (`tests/adversarial/hacks/forge_pause_clock_via_library_files.py`).
Now the runner reports each timed window's start and end on its clock bound before the candidate was
imported (`time.perf_counter`: CLOCK_MONOTONIC, one clock for every process of the host), and the judge
subtracts the stops it made, timed on the same clock: no value the runner reads from judge memory
decides a time the judge reports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernelevolve.eval.runner_channel import ReplyError

# The runner's clock read against the judge's: the same clock, read a few microseconds apart
CLOCK_SLACK_S = 0.002


class ClockMismatch(Exception):
    """A window outside the judge's own span of the request: the runner's clock is not the bound one."""


@dataclass(frozen=True)
class Span:
    """An interval on CLOCK_MONOTONIC, in seconds."""

    start_s: float
    end_s: float

    def overlap_s(self, other: Span) -> float:
        return max(0.0, min(self.end_s, other.end_s) - max(self.start_s, other.start_s))


def windows(data: Any) -> list[Span]:
    """The runner's timed windows, checked for form: finite [start, end] pairs in call order."""
    if not isinstance(data, list) or not data:
        raise ReplyError("the timing reply has no call windows")
    spans: list[Span] = []
    for pair in data:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in pair
            )
        ):
            raise ReplyError("a call window is not two finite clock readings")
        span = Span(float(pair[0]), float(pair[1]))
        if span.end_s < span.start_s or (spans and span.start_s < spans[-1].end_s):
            raise ReplyError("call windows out of order")
        spans.append(span)
    return spans


def outside(spans: Sequence[Span], around: Span) -> Span | None:
    """The first window that does not lie within the judge's own span of the request, or None. The
    windows are on the clock the runner bound before the candidate's import; one outside the span the
    judge saw is a clock replaced since."""
    for span in spans:
        if span.start_s < around.start_s - CLOCK_SLACK_S or span.end_s > around.end_s + CLOCK_SLACK_S:
            return span
    return None


def samples_ms(spans: Sequence[Span], pauses: Sequence[Span]) -> list[float]:
    """Each window's length less the judge's pauses within it, in milliseconds."""
    return [
        1e3 * max(0.0, span.end_s - span.start_s - sum(span.overlap_s(pause) for pause in pauses))
        for span in spans
    ]


def wall_samples(data: Any, count: int, pauses: Sequence[Span], around: Span) -> list[float]:
    """The samples the judge reports for a runner's `count` wall-clock calls: its windows (`data`), each
    within `around`, less the judge's `pauses`."""
    spans = windows(data)
    if len(spans) != count:
        raise ReplyError("the call windows do not match the samples")
    stray = outside(spans, around)
    if stray is not None:
        raise ClockMismatch(
            f"the candidate's process reported a call from {stray.start_s:.6f} s to {stray.end_s:.6f} s, "
            f"outside the {around.start_s:.6f}-{around.end_s:.6f} s the judge waited for it: its clock is not "
            "the one bound before the candidate was imported"
        )
    return samples_ms(spans, pauses)
