"""Evaluations per GPU-minute of search (bench/sweep/rate.py) and the GPU share a sweep records per problem."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.bench.sweep.rate import evaluation_rate, gpu_share_from_settings, rate_lines
from kernelevolve.bench.sweep.run import gpu_share
from kernelevolve.bench.sweep.summary import summarize
from kernelevolve.bench.sweep.summary_markdown import summary_markdown
from tests.sweep_options import problem_record, sweep_options


def _record(problem: str, evaluations: int, search_s: float, **extra: Any) -> dict[str, Any]:
    return problem_record(
        problem, evaluations=evaluations, search_wall_s=search_s, wall_s=search_s + 20, **extra
    )


def test_rate_per_level_weighs_search_time_by_gpu_share() -> None:
    records = [
        _record("L1/1", 12, 40.0, gpu_share=0.5),  # 12 evaluations in 20 GPU-seconds
        _record("L1/2", 6, 60.0),  # the sweep's default share: 0.5 -> 30 GPU-seconds
        _record("L2/1", 4, 120.0, gpu_share=1.0),
        _record("L2/2", 0, 0.0, gpu_share=1.0),  # a run that never searched: no GPU-minutes to count
    ]
    rate = evaluation_rate(records, default_share=0.5)
    assert rate["levels"]["1"]["problems"] == 2 and rate["levels"]["1"]["evaluations"] == 18
    assert math.isclose(rate["levels"]["1"]["per_gpu_minute"], 18 / (50 / 60))
    assert math.isclose(rate["levels"]["2"]["per_gpu_minute"], 4 / 2) and rate["levels"]["2"]["problems"] == 1
    assert math.isclose(rate["overall"]["gpu_minutes"], (20 + 30 + 120) / 60)
    assert evaluation_rate([_record("L1/1", 5, 30.0)])["overall"]["per_gpu_minute"] is None  # no share known
    text = "\n".join(rate_lines(rate))
    assert "| level 1 | 2 | 18 | 0.8 | 21.6 |" in text
    assert rate_lines(evaluation_rate([_record("L1/1", 5, 30.0)])) == []


def test_the_share_comes_from_the_sweeps_settings_for_older_records() -> None:
    assert gpu_share_from_settings({"platform": "h200", "sets": ["+evaluator.num_gpus_per_actor=0.5"]}) == 0.5
    assert gpu_share_from_settings({"platform": "h200", "sets": ["search=islands"]}) is None
    assert gpu_share_from_settings({"platform": "cpu", "sets": ["+evaluator.num_gpus_per_actor=0.5"]}) is None


@pytest.mark.parametrize(
    ("platform", "evaluator", "slots", "sets", "share"),
    [
        ("h200", "local", ["cuda:0", "cuda:1", "cuda:0", "cuda:1"], {}, 0.5),  # --parallel 4 on 2 GPUs
        ("h200", "local", ["cuda:0"], {}, 1.0),
        ("h200", "ray", [None, None], {"num_gpus_per_actor": 0.25}, 0.25),
        ("h200", "ray", [None], {}, 1.0),
        ("cpu", "local", ["cpu"], {}, None),
    ],
)
def test_the_gpu_share_of_each_concurrent_problem(
    tmp_path: Path,
    platform: str,
    evaluator: str,
    slots: list[str | None],
    sets: dict[str, Any],
    share: float | None,
) -> None:
    base = {"platform": {"name": platform}, "evaluator": sets}
    options = sweep_options(tmp_path, platform=platform, evaluator=evaluator)
    assert gpu_share(base, options, slots) == share


def test_the_summary_has_the_rate_table() -> None:
    records = [_record("L1/1", 12, 40.0, gpu_share=0.5, speedup_vs_eager=1.2, speedup_vs_compile=1.1)]
    summary = summarize(records)
    summary["evaluation_rate"] = evaluation_rate(records)
    assert "## Evaluations per GPU-minute of search" in summary_markdown(summary)


def test_the_table_says_where_an_evaluations_time_goes() -> None:
    records = [
        _record("L1/1", 4, 40.0, gpu_share=0.5, evaluation_stages_s={"timing": 6.0, "correctness": 2.0}),
        _record("L1/2", 2, 20.0, gpu_share=0.5, evaluation_stages_s={"compile": 3.0, "timing": 1.0}),
        _record("L2/1", 3, 30.0, gpu_share=0.5),  # from before the stages were recorded
    ]
    text = "\n".join(rate_lines(evaluation_rate(records)))
    assert "| group | evaluations | s per evaluation | timing | compile | correctness | other |" in text
    # overall: 12 s over the 6 evaluations with stages; the level-2 record has none to show
    assert "| overall | 6 | 2.00 | 58% | 25% | 17% | 0% |" in text
    assert "| level 1 | 6 | 2.00 |" in text and "| level 2 | 3 |" not in text.split("Where")[1]
    assert "Where an evaluation" not in "\n".join(rate_lines(evaluation_rate(records[2:], 0.5)))
