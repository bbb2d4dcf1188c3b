"""The conv bench CLI on the CPU: our convolution in each variant, evaluated by the harness, as data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.bench.sweep.conv_bench import (
    Problem,
    UsageError,
    evaluation_line,
    main,
    parse_variant,
    trials,
)
from kernelevolve.types import Candidate, EvalReport, KernelSpec, Status
from kernelevolve.variation.tunables import current_values
from tests.kernelbench_data import KERNELBENCH, needs_kernelbench

PROBLEM = "L1/67"  # conv_standard_1D: the quickest KernelBench convolution under the interpreter
CHEAP = [
    *("--platform", "cpu", "--kernelbench-path", str(KERNELBENCH)),
    *("--eval", "timing_trials=2", "warmup_trials=1", "correctness_trials=1"),
]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@needs_kernelbench
def test_every_conv_seed_is_measured_in_every_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    variants = ["CONV_LOOP=fused", "CONV_LOOP=taps"]
    # A time limit of 0 lets the first problem run and starts no other.
    argv = [*CHEAP, "--problems", PROBLEM, "L1/64", "--variants", *variants, "--time-limit-s", "0"]
    assert main([*argv, "--out", str(tmp_path)]) == 0

    lines = _lines(tmp_path / "results.jsonl")
    (problem,) = [line for line in lines if line["kind"] == "problem"]
    assert problem["problem"] == PROBLEM and problem["eager_ms"] > 0 and problem["conv_seeds"]
    evaluations = [line for line in lines if line["kind"] == "evaluation"]
    assert len(evaluations) == len(problem["conv_seeds"]) * len(variants)
    assert sorted(line["variant"] for line in evaluations) == sorted(variants * len(problem["conv_seeds"]))
    sources = {line["candidate_id"]: line["source"] for line in _lines(tmp_path / "candidates.jsonl")}
    for line in evaluations:
        assert line["status"] == "ok", line["feedback"]
        assert line["ms"] > 0 and line["vs_eager"] > 0 and line["phase_s"]["timing"] > 0
        loop = line["variant"].removeprefix("CONV_LOOP=")
        assert line["conv_params"]["CONV_LOOP"] == loop
        assert "_ke_conv" in sources[line["candidate_id"]]
        assert current_values(sources[line["candidate_id"]])["CONV_LOOP"] == loop

    out = capsys.readouterr().out
    assert "LOOP=fused" in out and "LOOP=taps" in out and "not started L1/64" in out


@needs_kernelbench
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--problems", "L1/999"], "no problem L1/999"),
        (["--problems", "57"], "is not a problem"),
        (["--problems", PROBLEM, "--variants", "CONV_LOOP=spiral"], "is not one of auto, taps, fused"),
        (["--problems", PROBLEM, "--variants", "CONV_LOOP"], "is not NAME=VALUE"),
        (["--problems", PROBLEM, "--variants", "LOOP=taps"], "LOOP is no tunable of ours"),
        (["--problems", PROBLEM, "--variants", "CONV_LOOP=taps,CONV_LOOP=fused"], "given twice"),
        (["--problems", PROBLEM, "--eval", "timing_trial=3"], "unknown eval setting"),
    ],
)
def test_usage_errors_name_what_is_wrong(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*CHEAP, *args, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "results.jsonl").exists()


def test_a_failure_is_a_line_and_seeds_giving_the_same_child_are_measured_once() -> None:
    source = (
        'CONV_FP32_PRECISION = "ieee"  # tune: "ieee", "tf32x3"\n'
        'CONV_LOOP = "taps"  # tune: "taps", "fused"\n'
        "_ke_conv = None\n"
    )
    exact = Candidate(source, "triton", "compiler_seed", metadata={"own_kernels": True})
    twin = Candidate(
        source.replace('"ieee"  #', '"tf32x3"  #'),
        "triton",
        "compiler_seed",
        metadata={"fp32_precision": "tf32x3"},
    )
    variants = [parse_variant("CONV_LOOP=taps,CONV_FP32_PRECISION=ieee"), parse_variant("CONV_LOOP=taps")]
    planned = trials([exact, twin], variants)
    assert [(t.seeds, t.variant.text) for t in planned] == [
        ((0, 1), "CONV_LOOP=taps,CONV_FP32_PRECISION=ieee"),  # the twin's child is the exact seed's
        ((0,), "CONV_LOOP=taps"),
        ((1,), "CONV_LOOP=taps"),
    ]
    baselines = {"eager_ms": 2.0, "eager_exact_ms": 4.0, "compile_ms": None}
    problem = Problem("L1/57", KernelSpec("conv", "pass"), (exact, twin), 2, baselines, 1.0)
    report = EvalReport(planned[0].child.id, Status.INCORRECT, "mismatch", "max abs error 0.5\nat [0, 3]")
    line = evaluation_line(problem, planned[0], report)
    assert line["status"] == "incorrect" and line["feedback"] == "max abs error 0.5"
    assert line["seed"] == "inductor-layout/ieee" and line["also_seeds"] == ["inductor-layout/tf32x3"]
    assert line["ms"] is None and line["vs_eager"] is None and line["eager_exact_ms"] == 4.0


def test_library_variants_set_cudnns_tunables_only_with_library() -> None:
    variant = parse_variant("LIBRARY_CONV_BENCHMARK=True,LIBRARY_CONV_FP32_PRECISION=tf32x3", library=True)
    assert variant.values == {"LIBRARY_CONV_BENCHMARK": True, "LIBRARY_CONV_FP32_PRECISION": "tf32x3"}
    with pytest.raises(UsageError, match="LIBRARY_CONV_BENCHMARK is no tunable of ours"):
        parse_variant("LIBRARY_CONV_BENCHMARK=True")
    with pytest.raises(UsageError, match="CONV_LOOP is no tunable of ours"):
        parse_variant("CONV_LOOP=taps", library=True)


@needs_kernelbench
def test_library_mode_on_the_cpu_finds_no_cudnn_seed_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cuDNN's convolution is rendered into GPU seeds only: on the CPU the problem's line says why nothing ran."""
    assert main([*CHEAP, "--library", "--problems", PROBLEM, "--out", str(tmp_path)]) == 0
    (problem,) = _lines(tmp_path / "results.jsonl")
    assert problem["error"] == "no seed with cuDNN's convolution" and problem["proposed_seeds"] > 0
    assert "nothing measured" in capsys.readouterr().out
