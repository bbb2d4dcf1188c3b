"""Both verdicts of a KernelBench problem on GPU convolutions: PyTorch's defaults (the protocol) and exact fp32,
from the harness's flags, in the sweep record and its summary."""

from __future__ import annotations

from kernelevolve.bench.sweep.precision import precision_lines, precision_rows
from kernelevolve.bench.sweep.run import precision_verdicts
from kernelevolve.specs.precision import EXACT_FP32_CORRECT, EXACT_FP32_INCORRECT


def test_counts_each_verdict_and_the_winners_at_exact_fp32() -> None:
    log = [
        {"id": "a", "status": "ok", "flags": [EXACT_FP32_CORRECT]},
        {"id": "b", "status": "ok", "flags": [EXACT_FP32_INCORRECT]},  # matches TF32's rounding only
        {
            "id": "c",
            "status": "incorrect",
            "flags": [EXACT_FP32_CORRECT],
        },  # an exact kernel the protocol rejects
        {"id": "d", "status": "incorrect", "flags": [EXACT_FP32_INCORRECT]},
        {"id": "e", "status": "compile_error"},  # never reached a check
    ]
    verdicts = precision_verdicts(log, {"id": "b", "flags": [EXACT_FP32_INCORRECT]})
    assert verdicts == {
        "checked": 4,
        "protocol_correct": 2,
        "exact_fp32_correct": 2,
        "exact_fp32_only": 1,
        "protocol_only": 1,
        "winner_exact_fp32_correct": False,
    }
    assert precision_verdicts(log[4:], None) is None  # no exact-fp32 opinion: nothing to show
    no_winner = precision_verdicts(log[2:4], None)
    assert no_winner is not None and no_winner["winner_exact_fp32_correct"] is None


def test_the_summary_shows_problems_judged_at_both_precisions_only() -> None:
    records = [
        {
            "problem": "L1/70",
            "correct": False,
            "precision_verdicts": {
                "checked": 3,
                "protocol_correct": 0,
                "exact_fp32_correct": 2,
                "exact_fp32_only": 2,
                "protocol_only": 0,
                "winner_exact_fp32_correct": None,
            },
        },
        {"problem": "L1/5", "correct": True, "precision_verdicts": None},
    ]
    rows = precision_rows(records)
    assert [row["problem"] for row in rows] == ["L1/70"]
    text = "\n".join(precision_lines(rows))
    assert "## Both protocols" in text and "| L1/70 | 3 | 0 | 2 | 2 | 0 | - |" in text
    assert precision_lines([]) == []
