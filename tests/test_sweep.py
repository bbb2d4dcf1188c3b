"""KernelBench sweeps: selection, the stratified sample, config composition, KernelBench-style summary,
and a real sweep over five level-1 problems on platform=cpu that is cut by its time limit and resumed."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.bench.kernelbench.problems import list_problems
from kernelevolve.bench.sweep.cli import build_parser, main
from kernelevolve.bench.sweep.driver import Sweep, finished_before, parse_ids, select_problems
from kernelevolve.bench.sweep.run import (
    SweepError,
    compose_base_config,
    device_slots,
    problem_config,
    record_from_results,
    run_problem_isolated,
)
from kernelevolve.bench.sweep.sample import op_family, read_sample, sample_markdown, stratified_sample
from kernelevolve.bench.sweep.summary import (
    compile_within_tolerance_ms,
    eager_within_tolerance_ms,
    load_records,
    summarize,
)
from kernelevolve.bench.sweep.summary_markdown import summary_markdown, write_summary
from tests.gpu import gpu_platform_name, needs_cuda
from tests.kernelbench_data import KERNELBENCH, needs_kernelbench
from tests.sweep_options import FAST_SETS, problem_record, sweep_options

SAMPLE_FILE = Path(__file__).resolve().parents[1] / "experiments" / "sweep_sample.md"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "cache"))


def test_parse_ids() -> None:
    assert parse_ids("1-3,19, 7") == {1, 2, 3, 7, 19}
    with pytest.raises(SweepError, match="N-M"):
        parse_ids("1-x")
    with pytest.raises(SweepError, match="backwards"):
        parse_ids("9-3")


@needs_kernelbench
def test_selection_by_levels_ids_and_sample(tmp_path: Path) -> None:
    chosen = select_problems(sweep_options(tmp_path, levels=(1, 2), ids="19-20"))
    assert [(p.level, p.problem_id) for p in chosen] == [(1, 19), (1, 20), (2, 19), (2, 20)]
    sample = tmp_path / "sample.md"
    sample.write_text("rule text mentioning L1/1 is not a list line\n- L2/5 x\n* L1/19 relu (activation)\n")
    assert read_sample(sample) == [(2, 5), (1, 19)]
    chosen = select_problems(sweep_options(tmp_path, levels=(1, 2, 3), sample=sample))
    assert [(p.level, p.problem_id) for p in chosen] == [(2, 5), (1, 19)]  # the sample's order
    with pytest.raises(SweepError, match="empty"):
        select_problems(sweep_options(tmp_path, levels=(3,), sample=sample))


@needs_kernelbench
def test_stratified_sample_is_seeded_varied_and_matches_the_shipped_list(tmp_path: Path) -> None:
    problems = list_problems(KERNELBENCH, (1, 2, 3))
    sample = stratified_sample(problems, {1: 10, 2: 10, 3: 5}, seed=0)
    assert stratified_sample(problems, {1: 10, 2: 10, 3: 5}, seed=0) == sample
    assert [sum(p.level == level for p in sample) for level in (1, 2, 3)] == [10, 10, 5]
    for level in (1, 2, 3):  # round robin: no family twice before every family has one
        families = [op_family(p) for p in sample if p.level == level]
        available = {op_family(p) for p in problems if p.level == level}
        assert len(set(families)) == min(len(families), len(available))
    assert stratified_sample(problems, {1: 10}, seed=1) != sample[:10]
    pairs = [(p.level, p.problem_id) for p in sample]
    written = tmp_path / "sample.md"
    written.write_text(sample_markdown(sample, 0, "problems.jsonl"))
    assert read_sample(written) == pairs
    assert read_sample(SAMPLE_FILE) == pairs  # experiments/sweep_sample.md is this rule's output


@needs_kernelbench
def test_config_is_composed_like_the_cli(tmp_path: Path) -> None:
    options = sweep_options(
        tmp_path, evaluator="ray", sets=("search=islands", "platform.eval.timing_trials=7")
    )
    base = compose_base_config(options)
    assert base["search"]["policy"] == "islands"
    assert base["search"]["termination"]["max_evaluations"] == 3
    assert base["evaluator"]["name"] == "ray" and base["evaluator"]["num_actors"] == 1
    assert base["platform"]["eval"]["timing_trials"] == 7
    with pytest.raises(SweepError, match="no_such_search"):
        compose_base_config(sweep_options(tmp_path, sets=("search=no_such_search",)))
    problem = select_problems(sweep_options(tmp_path, ids="19"))[0]
    runs = tmp_path / "runs"
    cfg = problem_config(base, problem, runs, "cuda:1")
    assert cfg["spec"] == "kernelbench:1/19" and cfg["run"] == {"root": str(runs), "name": "L1_019"}
    assert cfg["platform"]["devices"] == ["cuda:1"] and cfg.get("resume") is None
    assert base["platform"]["devices"] == ["cpu"]  # the shared base is not modified
    cut_off = runs / "L1_019"  # a run killed mid-way has its checkpoint: the next call resumes it
    cut_off.mkdir(parents=True)
    (cut_off / "graph.jsonl").write_text("")
    (cut_off / "spec.json").write_text("{}")
    assert problem_config(base, problem, runs, None)["resume"] == str(cut_off)


def test_problems_share_gpus_round_robin_when_parallel_exceeds_them(tmp_path: Path) -> None:
    base = compose_base_config(sweep_options(tmp_path))
    gpus = dict(base, platform=dict(base["platform"], name="h200", devices=["cuda:0", "cuda:1"]))
    assert device_slots(gpus, sweep_options(tmp_path)) == ["cuda:0", "cuda:1"]
    assert device_slots(gpus, sweep_options(tmp_path, parallel=1)) == ["cuda:0"]
    assert device_slots(gpus, sweep_options(tmp_path, parallel=5)) == ["cuda:0", "cuda:1"] * 2 + ["cuda:0"]
    assert device_slots(base, sweep_options(tmp_path, parallel=3)) == ["cpu"] * 3


def _record(
    problem: str, status: str, eager: float | None = None, compiled: float | None = None
) -> dict[str, Any]:
    return problem_record(
        problem,
        status,
        speedup_vs_eager=eager,
        speedup_vs_compile=compiled,
        error="RuntimeError: boom\nmore" if status == "run_failed" else None,
        stop_reason="max_evaluations",
    )


def test_a_sample_is_summarised_from_a_larger_sweep(tmp_path: Path) -> None:
    """The sample's problems of a full sweep run with the same settings: its own tables, in a folder of its
    own, the sweep's summary untouched; a sample problem without a result is pending."""
    sweep = tmp_path / "full"
    (sweep / "results").mkdir(parents=True)
    for key, eager in [("L1/5", 2.0), ("L1/6", 8.0), ("L2/3", 0.5)]:
        record = {**_record(key, "ok", eager, eager), "finished_at": f"2026-11-30T0{int(eager)}:00:00+0000"}
        (sweep / "results" / f"L{key[1]}_{int(key.split('/')[1]):03d}.json").write_text(json.dumps(record))
    sample = tmp_path / "sample.md"
    sample.write_text("- L1/5 five\n- L2/3 three\n- L3/1 one\n")
    assert (
        main(
            [
                "--out",
                str(sweep),
                "--summary-only",
                "--sample",
                str(sample),
                "--summary-out",
                str(tmp_path / "s"),
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert [p["problem"] for p in summary["problems"]] == ["L1/5", "L2/3"] and summary["pending"] == ["L3/1"]
    assert math.isclose(summary["overall"]["geomean_speedup_vs_eager"], 1.0)  # L1/6 left out
    text = (tmp_path / "s" / "summary.md").read_text()
    assert (
        "sample sample.md" in text and "finished 2026-11-30T00:00:00+0000 to 2026-11-30T02:00:00+0000" in text
    )
    assert not (sweep / "summary.md").exists()
    assert main(["--out", str(sweep), "--summary-only", "--summary-out", str(tmp_path / "s")]) == 2


def test_summary_in_kernelbench_terms() -> None:
    records = [
        _record("L1/1", "ok", 2.0, 1.2),
        _record("L1/2", "ok", 0.9, None),
        _record("L1/3", "no_correct_kernel"),
        _record("L2/1", "ok", 1.6, 0.7),
        _record("L2/2", "run_failed"),
    ]
    summary = summarize(records, selected=["L1/1", "L1/2", "L1/3", "L2/1", "L2/2", "L3/9"])
    overall = summary["overall"]
    assert overall["problems"] == 5 and overall["correct"] == 3 and overall["correctness_rate"] == 0.6
    assert overall["fast_p_vs_eager"] == {"0": 0.6, "0.5": 0.6, "0.8": 0.6, "1": 0.4, "1.5": 0.4, "2": 0.0}
    assert overall["fast_p_vs_compile"]["0"] == 0.4 and overall["fast_p_vs_compile"]["1"] == 0.2
    assert math.isclose(overall["geomean_speedup_vs_eager"], (2.0 * 0.9 * 1.6) ** (1 / 3))
    assert math.isclose(overall["geomean_speedup_vs_compile"], (1.2 * 0.7) ** 0.5)
    assert overall["correct_without_compile_baseline"] == 1
    assert summary["levels"]["1"]["problems"] == 3 and summary["levels"]["2"]["fast_p_vs_eager"]["1.5"] == 0.5
    assert [(f["problem"], f["status"], f["detail"]) for f in summary["failures"]] == [
        ("L1/3", "no_correct_kernel", "max_evaluations"),
        ("L2/2", "run_failed", "RuntimeError: boom"),
    ]
    assert summary["pending"] == ["L3/9"]
    text = summary_markdown(summary)
    assert "| overall | 5 | 60% | 1.42x | 60% | 60% | 60% | 40% | 40% | 0% |" in text
    assert "L3/9" in text and "run_failed" in text


def test_record_from_run_results() -> None:
    eager = {"median_ms": 2.0}
    results = {
        "best": {
            "backend": "triton",
            "operator": "tune",
            "speedup_vs_eager": 4.0,
            "speedup_vs_compile": None,
            "shapes": [{"best_ms": 0.5}],
        },
        "baselines": {"default": {"eager": eager, "compiled": None}},
        "evaluations": 7,
        "evaluations_by_status": {"ok": 5, "incorrect": 2, "timeout": 0},
        "stop_reason": "plateau",
    }
    record = record_from_results(results)
    assert record["status"] == "ok" and record["correct"] and record["winner_backend"] == "triton"
    assert (record["best_ms"], record["eager_ms"], record["compile_ms"]) == (0.5, 2.0, None)
    assert record["evaluations_by_status"] == {"ok": 5, "incorrect": 2}
    empty = record_from_results({**results, "best": None})
    assert empty["status"] == "no_correct_kernel" and empty["best_ms"] is None and not empty["correct"]
    assert record["eager_exact_ms"] is None  # no convolution: eager was timed once
    assert record["evaluation_stages_s"] is None  # results.json from before the stages were summed
    stages = {"compile": 1.5, "timing": 4.0}
    timed = record_from_results({**results, "time": {"wall_s": 9.0, "evaluation_stages_s": stages}})
    assert timed["evaluation_stages_s"] == stages and timed["search_wall_s"] == 9.0


def test_eager_at_the_candidates_precision_is_recorded_and_tabled() -> None:
    """GPU convolutions: eager is also timed exact, and the summary shows both speedups."""
    baseline = {"eager": {"median_ms": 2.0}, "compiled": None, "eager_exact": {"median_ms": 6.0}}
    best = {
        "backend": "triton",
        "operator": "compiler_seed",
        "speedup_vs_eager": 0.5,
        "shapes": [{"best_ms": 4.0}],
    }
    record = record_from_results({"best": best, "baselines": {"default": baseline}, "evaluations": 2})
    assert record["eager_exact_ms"] == 6.0
    rows = {**_record("L2/5", "ok", 0.5), "best_ms": 4.0, "eager_ms": 2.0, "eager_exact_ms": 6.0}
    passing = {**rows, "problem": "L3/9", "eager_within_tolerance": True}
    records = [rows, passing, _record("L1/1", "ok", 2.0)]
    text = summary_markdown(summarize(records, selected=["L2/5", "L3/9", "L1/1"]))
    assert "### Eager at the candidates' precision" in text
    # eager's TF32 output: not checked for L2/5, within the tolerance for L3/9
    assert "| L2/5 | 4 | 2 | - | 6 | 0.50x | 1.50x |" in text and "| L1/1 |" not in text.split("###")[1]
    assert "| L3/9 | 4 | 2 | yes | 6 | 0.50x | 1.50x |" in text
    plain = summary_markdown(summarize([_record("L1/1", "ok", 2.0)], selected=["L1/1"]))
    assert "candidates' precision" not in plain


def test_problems_without_a_torch_compile_time_are_listed_with_why() -> None:
    failed = {
        **_record("L3/32", "ok", 2.0),
        "compile_ms": None,
        "compile_error": "default: RuntimeError: meta | x",
    }
    old = {**_record("L3/34", "ok", 1.5), "compile_ms": None}
    timed = {**_record("L1/1", "ok", 2.0, 1.1), "compile_ms": 1.0}
    text = summary_markdown(summarize([failed, old, timed]))
    section = text.split("### Without a torch.compile time")[1].split("##")[0]
    assert "| L3/32 | 32_op | default: RuntimeError: meta \\| x |" in section
    assert "| L3/34 | 34_op | no reason recorded" in section and "L1/1" not in section
    assert "Without a torch.compile time" not in summary_markdown(summarize([timed]))


def test_baselines_outside_the_tolerance_are_recorded_and_reported_apart() -> None:
    """A torch.compile output that misses the tolerance (TF32 convolutions, reordered sums) is named, and
    the torch.compile measures are also given over the problems whose torch.compile output meets it."""
    shape = {"eager": {"median_ms": 2.0}, "compiled": {"median_ms": 1.0}}
    best = {
        "backend": "triton",
        "operator": "tune",
        "speedup_vs_eager": 1.0,
        "shapes": [{"best_ms": 2.0}] * 2,
    }
    results = {
        "best": best,
        "baselines": {
            "a": {
                **shape,
                "eager_within_tolerance": True,
                "compiled_within_tolerance": True,
                "compiled_max_error": 1e-6,
            },
            "b": {
                **shape,
                "eager_within_tolerance": True,
                "compiled_within_tolerance": False,
                "compiled_max_error": 0.5,
            },
        },
    }
    record = record_from_results(results)
    assert (record["eager_within_tolerance"], record["compile_within_tolerance"]) == (True, False)
    assert record["compile_max_error"] == 0.5
    older = record_from_results({"best": best, "baselines": {"a": shape}})
    assert older["compile_within_tolerance"] is None and older["compile_max_error"] is None

    records = [
        {**_record("L1/1", "ok", 2.0, 3.0), "compile_within_tolerance": True},
        {**_record("L1/2", "ok", 1.0, 0.25), "compile_within_tolerance": False},
        {**_record("L1/3", "ok", 1.0, 0.5), "compile_within_tolerance": None},
    ]
    summary = summarize(records)
    accuracy = summary["baseline_accuracy"]
    assert accuracy["compile_checked"] == 2 and accuracy["compile_outside_tolerance"] == ["L1/2"]
    apart = accuracy["vs_compile_where_it_meets_tolerance"]["strict"]
    assert apart["problems"] == 1 and math.isclose(apart["geomean_speedup_vs_compile"], 3.0)
    text = summary_markdown(summary)
    assert "misses the tolerance on 1 of 2 problems checked: L1/2." in text
    assert "| strict | 1 | 100% | 3.00x | 100% |" in text
    assert "Baselines' own outputs" not in summary_markdown(summarize([_record("L1/1", "ok", 2.0)]))


def test_the_torch_compile_that_meets_the_tolerance_is_compared_apart() -> None:
    """Where torch.compile's default output misses the tolerance, its exact-fp32 run (recorded where the
    precision differs) is the one a correct kernel is compared with in the summary's last table."""
    shape = {"eager": {"median_ms": 4.0}, "compiled": {"median_ms": 1.0}}
    best = {"id": "k", "backend": "triton", "speedup_vs_eager": 2.0, "shapes": [{"best_ms": 2.0}]}
    baselines = {
        "a": {**shape, "compiled_within_tolerance": False, "compiled_exact": {"median_ms": 6.0}},
    }
    record = record_from_results({"best": best, "baselines": baselines})
    assert record["compile_exact_ms"] == 6.0 and record["compile_exact_within_tolerance"] is None
    record = record_from_results(
        {"best": best, "baselines": {"a": {**baselines["a"], "compiled_exact_within_tolerance": True}}}
    )
    assert record["compile_exact_within_tolerance"] is True

    def problem(key: str, best_ms: float, compile_ms: float, **fields: Any) -> dict[str, Any]:
        return {
            **_record(key, "ok", 1.0, compile_ms / best_ms),
            "best_ms": best_ms,
            "compile_ms": compile_ms,
            **fields,
        }

    records = [
        problem("L1/1", 1.0, 2.0, compile_within_tolerance=True),  # 2x its default compile
        problem(
            "L2/5",
            9.0,
            3.0,
            compile_within_tolerance=False,
            compile_exact_ms=18.0,
            compile_exact_within_tolerance=True,
        ),  # 0.33x the TF32 compile, 2x the exact one
        problem("L2/6", 1.0, 0.5, compile_within_tolerance=False),  # no exact run: left out
    ]
    summary = summarize(records)
    assert compile_within_tolerance_ms(records[1]) == 18.0 and compile_within_tolerance_ms(records[2]) is None
    within = summary["baseline_accuracy"]["vs_compile_that_meets_tolerance"]["strict"]
    assert within["problems"] == 2 and math.isclose(within["geomean_speedup_vs_compile"], 2.0)
    text = summary_markdown(summary)
    assert "### torch.compile at the candidates' precision" in text
    assert "| L2/5 | 9 | 3 | no | 18 | yes | 0.33x | 2.00x |" in text
    assert "Against the torch.compile whose output meets the tolerance" in text
    assert "| strict | 2 | 100% | 2.00x | 100% |" in text
    # without an exact-fp32 run it would repeat the table before it: not shown
    assert "whose output meets the tolerance" not in summary_markdown(summarize([records[0], records[2]]))


def test_the_eager_that_meets_the_tolerance_is_compared_apart() -> None:
    """Where eager's TF32 output misses the tolerance, its exact-fp32 time (the reference itself) is the
    one compared with; where nothing was checked (no convolution) eager is already at that precision."""

    def problem(key: str, best_ms: float, eager_ms: float, **fields: Any) -> dict[str, Any]:
        return {
            **_record(key, "ok", eager_ms / best_ms, 1.0),
            "best_ms": best_ms,
            "eager_ms": eager_ms,
            **fields,
        }

    records = [
        problem("L1/1", 1.0, 2.0),  # no convolution: 2x
        problem("L2/5", 8.0, 7.5, eager_within_tolerance=False, eager_exact_ms=32.0),  # 4x the exact one
        problem("L2/6", 1.0, 1.0, eager_within_tolerance=True, eager_exact_ms=3.0),  # default meets it: 1x
        problem("L2/7", 1.0, 0.5, eager_within_tolerance=False),  # no exact time: left out
    ]
    assert [eager_within_tolerance_ms(r) for r in records] == [2.0, 32.0, 1.0, None]
    summary = summarize(records)
    within = summary["baseline_accuracy"]["vs_eager_that_meets_tolerance"]["strict"]
    assert within["problems"] == 3 and math.isclose(within["geomean_speedup_vs_eager"], 2.0)
    text = summary_markdown(summary)
    assert "Against the eager whose output meets the tolerance" in text
    assert "| strict | 3 | 100% | 2.00x | 67% |" in text
    # eager's output met the tolerance everywhere: the table would repeat the first ones
    assert "eager whose output" not in summary_markdown(summarize([records[0], records[2]]))


def _winner(speedup: float, own: bool, library_share: float | None = None) -> dict[str, Any]:
    return {
        "id": f"k{speedup}",
        "backend": "triton",
        "operator": "compiler_seed" if not own else "template",
        "speedup_vs_eager": speedup,
        "speedup_vs_compile": speedup / 2,
        "own_kernels_only": own,
        "shapes": [{"best_ms": 1.0 / speedup}],
        "time_split": None if library_share is None else {"library_share": library_share},
    }


def _run_results(
    best: dict[str, Any] | None, strict_best: dict[str, Any] | None, strict: bool
) -> dict[str, Any]:
    return {
        "strict": strict,
        "best": best,
        "best_strict": strict_best,
        "baselines": {"default": {"eager": {"median_ms": 1.0}, "compiled": {"median_ms": 0.5}}},
        "evaluations": 4,
        "evaluations_by_status": {"ok": 4},
        "stop_reason": "max_evaluations",
    }


def test_record_carries_the_strict_and_the_permissive_winner() -> None:
    library, own = _winner(4.0, own=False, library_share=0.7), _winner(2.0, own=True)
    record = record_from_results(_run_results(library, own, strict=False))
    assert record["mode"] == "permissive" and record["speedup_vs_eager"] == 4.0  # the run's best
    assert record["own_kernels_only"] is False and record["library_share"] == 0.7
    assert record["strict"] == {
        "correct": True,
        "best_ms": 0.5,
        "speedup_vs_eager": 2.0,
        "speedup_vs_compile": 1.0,
        "winner_backend": "triton",
        "winner_operator": "template",
        "winner_fp32_precision": None,
        "roofline_fraction": None,  # this run's results carry no roofline floor
    }
    assert record["permissive"]["speedup_vs_eager"] == 4.0 and record["permissive"]["correct"]
    tf32 = {**library, "metadata": {"fp32_precision": "tf32"}}  # convolutions as eager runs them
    assert record_from_results(_run_results(tf32, own, strict=False))["winner_fp32_precision"] == "tf32"
    library_only = record_from_results(_run_results(library, None, strict=False))
    assert library_only["correct"] and not library_only["strict"]["correct"]
    strict_run = record_from_results(_run_results(own, own, strict=True))
    assert strict_run["mode"] == "strict" and strict_run["permissive"] is None
    old = _run_results(own, None, strict=True)  # results.json from before best_strict: best is strict
    del old["strict"], old["best_strict"]
    assert record_from_results(old)["strict"]["speedup_vs_eager"] == 2.0


def _problem(key: str, results: dict[str, Any]) -> dict[str, Any]:
    level, pid = key[1:].split("/")
    return {
        **record_from_results(results),
        "problem": key,
        "level": int(level),
        "problem_id": int(pid),
        "name": f"{pid}_op",
        "wall_s": 5.0,
    }


def test_permissive_sweep_summary_has_strict_and_permissive_tables(tmp_path: Path) -> None:
    records = [
        _problem(
            "L1/1", _run_results(_winner(4.0, own=False, library_share=0.8), _winner(2.0, own=True), False)
        ),
        _problem("L1/2", _run_results(_winner(3.0, own=False, library_share=0.9), None, False)),
        _problem("L2/1", _run_results(_winner(0.5, own=True), _winner(0.5, own=True), False)),
        _problem("L2/2", _run_results(None, None, False)),
    ]
    summary = summarize(records)
    assert summary["mode"] == "permissive" and set(summary["modes"]) == {"strict", "permissive"}
    strict, permissive = summary["modes"]["strict"]["overall"], summary["modes"]["permissive"]["overall"]
    assert permissive == summary["overall"]  # the top level is the sweep's own mode
    assert (permissive["correct"], strict["correct"]) == (3, 2)
    assert permissive["fast_p_vs_eager"]["1"] == 0.5 and strict["fast_p_vs_eager"]["1"] == 0.25
    assert math.isclose(strict["geomean_speedup_vs_eager"], (2.0 * 0.5) ** 0.5)
    assert strict["statuses"] == {"ok": 2, "library_only": 1, "no_correct_kernel": 1}
    assert [summary["modes"]["strict"]["levels"][k]["correct"] for k in ("1", "2")] == [1, 1]
    row = summary["problems"][0]
    assert (row["speedup_vs_eager"], row["strict_speedup_vs_eager"], row["own_kernels_only"]) == (
        4.0,
        2.0,
        False,
    )
    text = summary_markdown(summary)
    for heading in (
        "## Strict (own kernels only): against PyTorch eager",
        "## Strict (own kernels only): against torch.compile",
        "## Permissive (library calls allowed): against PyTorch eager",
        "## Permissive (library calls allowed): against torch.compile",
    ):
        assert heading in text
    assert "| overall | 4 | 50% | 1.00x | 50% | 25% | 25% | 25% | 25% | 0% |" in text  # strict vs eager
    assert "| L1/1 | 1_op | ok |" in text and "| 2.00x | 1.00x | no | 80% |" in text

    sweep = tmp_path / "sweep"
    (sweep / "results").mkdir(parents=True)
    for record in records:
        (sweep / "results" / f"L{record['level']}_{record['problem_id']:03d}.json").write_text(
            json.dumps(record)
        )
    assert write_summary(sweep)["modes"]["strict"]["overall"]["correct"] == 2
    assert "permissive mode" in (sweep / "summary.md").read_text()
    from kernelevolve.bench.sweep.report import render_sweep_report

    html = render_sweep_report(sweep)
    assert "Strict (own kernels only): against PyTorch eager" in html
    assert "Permissive (library calls allowed): against torch.compile" in html
    assert "strict vs eager" in html and "library_only" in html


def test_strict_sweep_summary_reports_strict_only() -> None:
    records = [_problem("L1/1", _run_results(_winner(2.0, own=True), _winner(2.0, own=True), True))]
    summary = summarize(records)
    assert summary["mode"] == "strict" and set(summary["modes"]) == {"strict"}
    assert summary["modes"]["strict"]["overall"] == summary["overall"]
    text = summary_markdown(summary)
    assert "## Strict (own kernels only): against PyTorch eager" in text and "## Permissive" not in text
    assert "strict vs eager" not in text and "`--permissive` adds them" in text
    # records written before modes existed read as strict results
    old = {k: v for k, v in records[0].items() if k not in ("mode", "strict", "permissive")}
    assert summarize([old])["modes"]["strict"]["overall"]["correct"] == 1


def test_permissive_flag_composes_strict_false(tmp_path: Path) -> None:
    from kernelevolve.app import eval_settings

    args = build_parser().parse_args(["--out", str(tmp_path), "--permissive"])
    assert args.permissive and not build_parser().parse_args(["--out", str(tmp_path)]).permissive
    base = compose_base_config(sweep_options(tmp_path, permissive=True))
    assert base["strict"] is False and eval_settings(base).strict is False
    assert eval_settings(compose_base_config(sweep_options(tmp_path))).strict is True
    # a sweep folder from before the setting resumes as strict; switching the mode needs a new folder
    options = sweep_options(tmp_path)
    options.out.mkdir(parents=True)
    old = Sweep(options)._settings()
    del old["permissive"]
    (options.out / "sweep.json").write_text(json.dumps({"settings": old, "selected": []}))
    Sweep(options)._write_manifest([])
    with pytest.raises(SweepError, match="permissive"):
        Sweep(replace(options, permissive=True))._write_manifest([])


@needs_kernelbench
def test_failed_runs_are_recorded_not_raised(tmp_path: Path) -> None:
    broken = sweep_options(tmp_path, ids="19", sets=(*FAST_SETS, "search.policy=no_such_policy"))
    outcome = Sweep(broken).run()
    assert outcome.ran == ["L1/19"] and outcome.complete
    (record,) = load_records(broken.out)
    assert record["status"] == "run_failed" and "no_such_policy" in record["error"]
    assert Sweep(broken).run().ran == []  # a result, even a failure, is not redone...
    assert Sweep(replace(broken, retry_failed=True)).run().ran == ["L1/19"]  # ...unless asked
    with pytest.raises(SweepError, match="budget_evals"):
        Sweep(sweep_options(tmp_path, ids="19", budget_evals=5, sets=broken.sets)).run()
    barren = sweep_options(
        tmp_path, ids="20", out=tmp_path / "barren", sets=(*FAST_SETS, "search.operators=[tune]")
    )
    Sweep(barren).run()  # tuning needs a parent and nothing seeds one: no kernel at all
    (record,) = load_records(barren.out)
    assert record["status"] == "no_correct_kernel" and record["evaluations"] == 0
    assert "no_correct_kernel" in (barren.out / "summary.md").read_text()


def test_an_isolated_problem_runs_in_its_own_process_and_a_death_there_is_a_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    from kernelevolve.bench.kernelbench.problems import Problem
    from kernelevolve.bench.sweep import run as sweep_run
    from tests.sweep_options import die_in_child, hang_after_the_record, record_of_child

    problem = Problem(level=3, problem_id=33, name="33_VanillaRNN", code="")
    cfg = {"platform": {"name": "cpu"}, "evaluator": {"name": "ray"}, "note": [1, 2]}
    record = run_problem_isolated(cfg, problem, record_of_child)
    assert record["problem"] == "L3/33" and record["pid"] != os.getpid()
    # the process ends right after its record: the search need not wait for proposals still running
    assert record["cfg"] == {**cfg, "search": {"proposal_drain_s": 0.0}}
    monkeypatch.setattr(sweep_run, "CHILD_EXIT_S", 1.0)
    start = time.monotonic()
    hung = run_problem_isolated(cfg, problem, hang_after_the_record)
    # the record kept, the process gone at once despite its thread (the kill after CHILD_EXIT_S is the backstop)
    assert hung["pid"] != os.getpid() and time.monotonic() - start < 30
    died = run_problem_isolated(cfg, problem, die_in_child)
    assert died["status"] == "run_failed" and "exit code 7" in died["error"]
    assert died["problem"] == "L3/33" and died["evaluator"] == "ray" and died["wall_s"] > 0


@needs_kernelbench
def test_an_isolated_sweep_gets_the_same_records(tmp_path: Path) -> None:
    options = sweep_options(tmp_path, ids="19", isolate=True)
    outcome = Sweep(options).run()
    assert outcome.ran == ["L1/19"] and outcome.complete
    (record,) = load_records(options.out)
    assert record["status"] == "ok" and record["evaluations"] >= 1
    manifest = json.loads((options.out / "sweep.json").read_text())
    assert manifest["calls"][-1]["isolated"] is True


@pytest.mark.gpu
@needs_cuda
@needs_kernelbench
def test_an_isolated_ray_sweep_runs_on_the_gpus(tmp_path: Path) -> None:
    """The full sweep's settings with --isolate, where they will run: the problems' processes must join the
    sweep's Ray cluster and get its GPUs (the device's preflight runs this before a call spends its time)."""
    pytest.importorskip("ray")
    out = tmp_path / "sweep"
    command = [
        sys.executable, "-m", "kernelevolve.bench.sweep", "--kernelbench-path", str(KERNELBENCH), "--levels", "1",
        "--ids", "19,21", "--platform", gpu_platform_name(), "--budget-evals", "2", "--budget-seconds", "30",
        "--baseline-allowance-s", "30", "--evaluator", "ray", "--set", "+evaluator.num_gpus_per_actor=0.5",
        "platform.eval.measure_compile_baseline=false", "--permissive", "--isolate", "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    records = load_records(out)
    assert [r["status"] for r in records] == ["ok", "ok"], [r.get("error") for r in records]
    assert json.loads((out / "sweep.json").read_text())["calls"][-1]["isolated"] is True


@needs_kernelbench
def test_rerun_before_runs_older_results_again_once(tmp_path: Path) -> None:
    """After a fix: results older than the given time run again, once, however many calls it takes."""
    broken = sweep_options(tmp_path, ids="19", sets=(*FAST_SETS, "search.policy=no_such_policy"))
    assert Sweep(broken).run().ran == ["L1/19"]
    first = json.loads((broken.out / "results" / "L1_019.json").read_text())
    assert "gpu_share" in first and first["gpu_share"] is None  # a CPU sweep: no GPU-minutes
    time.sleep(1.1)  # records carry whole seconds
    fix = datetime.now(timezone.utc).replace(microsecond=0)
    assert Sweep(replace(broken, rerun_before=fix - timedelta(hours=1))).run().ran == []
    assert Sweep(replace(broken, rerun_before=fix)).run().ran == ["L1/19"]
    assert Sweep(replace(broken, rerun_before=fix)).run().ran == []  # the new result is younger
    assert (
        len(load_records(broken.out)) == 1
        and len((broken.out / "results.jsonl").read_text().splitlines()) == 2
    )  # the old record stays in the log
    assert finished_before(first, fix) and finished_before({}, fix)
    parser = build_parser()
    assert parser.parse_args(["--out", "x", "--rerun-before", "2026-12-01T06:00:00+00:00"]).rerun_before == (
        datetime(2026, 12, 1, 6, tzinfo=timezone.utc)
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["--out", "x", "--rerun-before", "2026-12-01T06:00:00"])  # no offset


@needs_kernelbench
@pytest.mark.slow
def test_sweep_stops_at_its_time_limit_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One problem's estimate is 60 s (budget 40 + allowance 20); with a 64 s limit a problem starts only
    # in the first 4 s of the call, so the first one does and the five never all fit. One evaluation a
    # problem: the estimate is the budget's seconds, and stopping and resuming do not depend on the search.
    options = sweep_options(tmp_path, ids="5,19-22", time_limit_s=64.0, budget_evals=1)
    first = Sweep(options).run()
    assert first.stopped_by_time and 1 <= len(first.ran) < 5 and len(first.remaining) == 5 - len(first.ran)
    done = {path: path.read_text() for path in (options.out / "results").glob("*.json")}
    assert len(done) == len(first.ran)
    second = Sweep(replace(options, time_limit_s=None)).run()
    assert second.skipped == first.ran and sorted(second.ran) == sorted(first.remaining) and second.complete
    assert all(path.read_text() == text for path, text in done.items())  # finished problems untouched
    lines = (options.out / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["problem"] for line in lines) == [
        "L1/19",
        "L1/20",
        "L1/21",
        "L1/22",
        "L1/5",
    ]
    assert len(list((options.out / "runs").iterdir())) == 5  # nothing was run twice
    calls = json.loads((options.out / "sweep.json").read_text())["calls"]
    assert [sorted(c["ran"]) for c in calls] == [sorted(first.ran), sorted(first.remaining)]
    assert all(c["gpus"] == 0 and c["problems_at_once"] == 1 and not c["fresh_caches"] for c in calls)
    records = load_records(options.out)
    assert {r["status"] for r in records} <= {"ok", "no_correct_kernel"}
    assert all(r["scaling"] for r in records)  # CPU scaling applied to every problem
    summary = json.loads((options.out / "summary.json").read_text())
    assert summary["overall"]["problems"] == 5 and summary["pending"] == []
    assert summary["overall"]["correct"] == sum(r["correct"] for r in records) >= 1
    argv = [
        "--kernelbench-path",
        str(KERNELBENCH),
        "--out",
        str(options.out),
        "--levels",
        "1",
        "--ids",
        "5,19-22",
    ]
    argv += ["--budget-evals", "1", "--budget-seconds", "40", "--set", *FAST_SETS]
    assert main(argv) == 0  # a third call finds everything done
    assert "ran 0 now, 5/5 have results" in capsys.readouterr().out


@needs_kernelbench
def test_a_level_slower_than_the_budget_estimate_stops_the_call_earlier(tmp_path: Path) -> None:
    """Level 3 took 70-265 s a problem against an 85 s estimate, and the call ran past its limit: the
    estimate is now the level's median wall time so far where that is longer."""
    options = sweep_options(tmp_path, ids="19-20", time_limit_s=100.0)  # estimate 60 s: one would start
    results = options.out / "results"
    results.mkdir(parents=True)
    for problem_id, wall_s in ((5, 150.0), (6, 300.0), (7, 90.0)):  # median 150 s
        record = {**_record(f"L1/{problem_id}", "ok", 1.0, 1.0), "wall_s": wall_s}
        (results / f"L1_{problem_id:03d}.json").write_text(json.dumps(record))
    outcome = Sweep(options).run()
    assert outcome.ran == [] and outcome.stopped_by_time
    assert Sweep(options)._estimate_s(1, {1: [150.0, 300.0, 90.0]}) == 150.0
    assert Sweep(options)._estimate_s(2, {1: [150.0]}) == options.estimate_s  # no level-2 time yet
    assert Sweep(options)._estimate_s(1, {1: [10.0]}) == options.estimate_s  # never below the budget's


@needs_kernelbench
def test_a_rerun_is_not_started_where_its_own_last_run_would_not_fit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """L3/41 and L3/42 had taken 235-265 s; a call with 200 s left started them on the level's 113 s
    estimate and cut both off. A re-run's own last wall time now counts where it is longer."""
    rerun_before = datetime(2999, 1, 1, tzinfo=timezone.utc)
    options = sweep_options(tmp_path, ids="19", time_limit_s=100.0, rerun_before=rerun_before)
    results = options.out / "results"
    results.mkdir(parents=True)
    record = {**_record("L1/19", "ok", 1.0, 1.0), "wall_s": 250.0, "finished_at": "2026-12-01T00:00:00+0000"}
    (results / "L1_019.json").write_text(json.dumps(record))
    for problem_id in (5, 6):  # the level's median (40 s) leaves the budget's 60 s estimate
        other = {**_record(f"L1/{problem_id}", "ok", 1.0, 1.0), "wall_s": 30.0 + 10 * (problem_id - 5)}
        (results / f"L1_{problem_id:03d}.json").write_text(json.dumps(other))
    sweep = Sweep(options)
    (problem,) = select_problems(options)
    assert sweep._previous_wall_s(problem) == 250.0
    with caplog.at_level("INFO", logger="kernelevolve.bench.sweep"):
        outcome = sweep.run()
    assert outcome.ran == [] and outcome.stopped_by_time  # its estimate alone (60 s) would have fit
    assert "250 s estimate (L1/19's last run)" in caplog.text
    (results / "L1_019.json").write_text("not json")
    assert sweep._previous_wall_s(problem) == 0.0  # an unreadable record gives no estimate of its own
