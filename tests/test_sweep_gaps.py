"""The problems furthest behind torch.compile, with their facts (bench/sweep/gaps.py), in sweep summaries."""

from __future__ import annotations

from typing import Any

from kernelevolve.bench.sweep.gaps import behind_lines, furthest_behind
from kernelevolve.bench.sweep.summary import summarize
from kernelevolve.bench.sweep.summary_markdown import summary_markdown
from tests.sweep_options import problem_record


def _record(problem: str, correct: bool, vs_compile: float | None, **extra: Any) -> dict[str, Any]:
    return problem_record(
        problem,
        "ok" if correct else "no_correct_kernel",
        speedup_vs_compile=vs_compile,
        speedup_vs_eager=vs_compile,
        compile_ms=1.0,
        eager_ms=1.0,
        best_ms=1.0 / vs_compile if vs_compile else None,
        **{"evaluations": 4, **extra},
    )


RECORDS = [
    _record("L1/1", True, 1.3, winner_operator="tune"),
    _record(
        "L1/2",
        True,
        0.2,
        eager_exact_ms=10.0,
        compile_within_tolerance=False,
        winner_operator="compiler_seed",
    ),
    _record("L2/3", False, None, stop_reason="wall_clock: 72.5 s elapsed, limit 40 s", evaluations=0),
    _record("L2/4", True, 0.9, winner_operator="tune", winner_fp32_precision="tf32"),
    _record("L3/5", True, None),  # correct, no torch.compile timing: not placed
]


def test_no_kernel_first_then_the_lowest_speedups_with_their_facts() -> None:
    rows = furthest_behind(RECORDS, count=3)
    assert [r["problem"] for r in rows] == ["L2/3", "L1/2", "L2/4"]
    assert rows[0]["facts"] == "no_correct_kernel: wall_clock: 72.5 s elapsed, limit 40 s"
    assert rows[1]["facts"] == (
        "torch.compile's output misses the tolerance; eager at exact fp32 10 ms (2.00x of it); won by compiler_seed"
    )
    assert rows[2]["facts"] == "won by tune; convolutions in one TF32 pass, as eager runs them"
    text = "\n".join(behind_lines(rows))
    assert "## The 3 furthest behind torch.compile" in text and "| L1/2 | 2_op | 0.2x | 5 | 1 | 4 |" in text
    assert behind_lines([]) == []


def test_sweep_summaries_carry_the_table() -> None:
    summary = summarize(RECORDS)
    assert [r["problem"] for r in summary["furthest_behind_compile"]][:2] == ["L2/3", "L1/2"]
    assert "furthest behind torch.compile" in summary_markdown(summary)
