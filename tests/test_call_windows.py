"""The judge, not the runner, takes its own stops out of a CPU runner's call times (`eval/call_windows`)."""

from __future__ import annotations

import pytest

from kernelevolve.eval import call_windows, judged_run, timers
from kernelevolve.eval.call_windows import Span
from kernelevolve.eval.runner_channel import ReplyError


def test_pauses_inside_a_window_are_taken_out() -> None:
    spans = [Span(10.0, 10.010), Span(10.020, 10.030)]
    pauses = [Span(10.002, 10.006), Span(10.015, 10.018), Span(10.028, 10.040)]
    assert call_windows.samples_ms(spans, pauses) == pytest.approx([6.0, 8.0])


def test_windows_are_checked_for_form() -> None:
    assert call_windows.windows([[1.0, 2.0], [2.0, 3]]) == [Span(1.0, 2.0), Span(2.0, 3.0)]
    for bad in ([], [[2.0, 1.0]], [[1.0, 3.0], [2.0, 4.0]], [[1.0, float("inf")]], [[True, 2.0]], [1.0]):
        with pytest.raises(ReplyError):
            call_windows.windows(bad)


def test_a_window_outside_the_judges_span_is_found() -> None:
    around = Span(100.0, 101.0)
    assert call_windows.outside([Span(100.1, 100.2)], around) is None
    assert call_windows.outside([Span(100.1, 100.2), Span(101.5, 101.6)], around) == Span(101.5, 101.6)


def test_the_wall_clock_timing_hands_windows_and_reads_no_pause_clock() -> None:
    observer = timers.CallObserver(lambda call, output: None, lambda calls: None)
    stats = timers.time_callable(
        lambda x: x + 1, [[1]], "cpu", trials=3, warmup=1, flush_l2=False, l2_bytes=0, observer=observer
    )
    assert len(observer.windows_s) == stats.trials == 3
    assert all(start <= end for start, end in observer.windows_s)
    assert not hasattr(observer, "paused_s")  # nothing the judge writes into shared memory times a call


def test_the_judge_rebuilds_wall_samples_from_windows() -> None:
    data = {"samples_ms": [9.0, 9.0], "method": "wall", "windows_s": [[1.000, 1.010], [1.020, 1.030]]}
    stats, samples = judged_run._stats(data, [Span(1.021, 1.029)], Span(0.5, 2.0), "")
    assert stats.median_ms == pytest.approx(6.0)  # 10 and 2 ms: the runner's own 9 ms are not reported
    assert samples == pytest.approx([10.0, 2.0])
    with pytest.raises(judged_run.Verdict) as caught:
        judged_run._stats(data, [], Span(1.5, 2.0), "")
    assert caught.value.fields["error_name"] == "timing_inconsistent"
