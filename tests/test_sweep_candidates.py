"""A sweep record's per-candidate list (`candidates`, from `kernelevolve.results.evaluation_log`) and the
`python -m kernelevolve.bench.sweep.candidates` table: a real CPU sweep of L1/19 whose seeds include a kernel
that is wrong and one that raises, so the list holds successes and failures as the run recorded them."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.bench.sweep.candidates import main as candidates_main
from kernelevolve.bench.sweep.driver import Sweep, select_problems
from kernelevolve.bench.sweep.summary import load_records
from kernelevolve.bench.sweep.summary_markdown import write_summary
from kernelevolve.results.evaluation_log import FEEDBACK_CHARS, ID_CHARS, entry, feedback_excerpt
from kernelevolve.search.graph import SearchGraph
from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.types import Candidate, EvalReport, FitnessValue, Status, TimingStats
from kernelevolve.variation import OPERATORS
from tests.kernelbench_data import needs_kernelbench
from tests.sweep_options import FAST_SETS, sweep_options

_RELU = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, {result}, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
{prologue}        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
"""
LONG_MESSAGE = "launch refused: " + "the grid does not fit " * 20
SEEDS = {
    "right": _RELU.format(result="tl.maximum(x, 0.0)", prologue=""),
    "wrong": _RELU.format(result="tl.maximum(x, 0.0) + 1.0", prologue=""),
    "raises": _RELU.format(
        result="tl.maximum(x, 0.0)", prologue=f"        raise ValueError({LONG_MESSAGE!r})\n"
    ),
}


class _ScriptedSeeds:
    """Seeds three ReLU kernels for L1/19: one correct, one incorrect, one that raises."""

    name = "scripted_seed"
    arity = 0

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        made = [
            Candidate(source, "triton", self.name, "seed", metadata={"template": label})
            for label, source in SEEDS.items()
        ]
        return [c for c in made if c.id not in ctx.graph]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One real CPU sweep of L1/19 (fusion seeds and the scripted ones), shared by the tests here."""
    tmp = tmp_path_factory.mktemp("sweep_candidates")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELEVOLVE_CACHE", str(tmp / "cache"))
        patch.setitem(OPERATORS._factories, "scripted_seed", lambda **_: _ScriptedSeeds())
        options = sweep_options(
            tmp,
            ids="19",
            budget_evals=8,
            sets=(*FAST_SETS, "search.operators=[fusion_seed,scripted_seed]"),
        )
        outcome = Sweep(options).run()
    assert outcome.ran == ["L1/19"]
    (record,) = load_records(options.out)
    return {"options": options, "record": record}


@needs_kernelbench
def test_record_lists_every_evaluated_candidate_in_evaluation_order(swept: dict[str, Any]) -> None:
    record = swept["record"]
    candidates = record["candidates"]
    assert record["status"] == "ok" and len(candidates) == record["evaluations"] >= 5
    assert dict(Counter(c["status"] for c in candidates)) == record["evaluations_by_status"]
    assert {"ok", "incorrect", "runtime_error"} <= set(record["evaluations_by_status"])
    # the order the reports were checkpointed in, which is the order they came back
    checkpoint = Path(record["run_dir"]) / "graph.jsonl"
    lines = [json.loads(line) for line in checkpoint.read_text().splitlines()]
    reported = list(dict.fromkeys(r["id"][:ID_CHARS] for r in lines if r["type"] == "report"))
    assert [c["id"] for c in candidates] == reported
    graph = SearchGraph.load(checkpoint)
    for item in candidates:
        (node,) = [n for n in graph.evaluated() if n.id.startswith(item["id"])]
        assert (item["operator"], item["mode"], item["backend"]) == (
            node.candidate.operator,
            node.candidate.mode,
            node.candidate.backend,
        )
        assert node.report is not None and item["eval_s"] == round(node.report.wall_s, 2)
        assert len(json.dumps(item)) < 600  # small enough for 250 problems' records
    by_label = {c["what"]["template"]: c for c in candidates if c["operator"] == "scripted_seed"}
    right, wrong, raised = by_label["right"], by_label["wrong"], by_label["raises"]
    assert right["status"] == "ok" and right["own_kernels_only"] is True and right["uses_library"] is False
    assert right["median_ms"] > 0 and right["mean_ms"] > 0 and right["speedup_vs_eager"] > 0
    assert "feedback" not in right and "error_name" not in right
    assert wrong["status"] == "incorrect" and wrong["feedback"].startswith("incorrect at shape")
    assert "median_ms" not in wrong and "own_kernels_only" not in wrong
    assert raised["status"] == "runtime_error" and raised["error_name"] == "ValueError"
    # the first line and the exception's own line, cut to one line of FEEDBACK_CHARS
    assert (
        raised["feedback"].startswith("running ModelNew at shape")
        and "raised ValueError: ..." in raised["feedback"]
    )
    assert "ValueError: launch refused: the grid does not fit" in raised["feedback"]
    assert len(raised["feedback"]) == FEEDBACK_CHARS and raised["feedback"].endswith("...")
    assert all("\n" not in c.get("feedback", "") for c in candidates)
    out_dir = swept["options"].out  # the summary stays as it was: no candidate list
    summaries = (out_dir / "summary.md").read_text() + (out_dir / "summary.json").read_text()
    assert "L1/19" in summaries and not any(c["id"] in summaries for c in candidates)
    fusion = [c for c in candidates if c["operator"] == "fusion_seed"]
    assert fusion and all(c["what"]["pattern"] == "pointwise" and c["what"]["strategy"] for c in fusion)


@needs_kernelbench
def test_cli_prints_a_problem_table_and_refuses_unknown_problems(
    swept: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir, record = swept["options"].out, swept["record"]
    assert candidates_main([str(out_dir), "L1/19"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith(f"L1/19 19_ReLU: ok, {record['evaluations']} evaluation(s)")
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#  id"))
    rows = [line for line in lines[header + 2 :] if line[:3].strip().isdigit()]
    assert [row.split()[1] for row in rows] == [c["id"] for c in record["candidates"]]
    assert any("scripted_seed/seed" in row and "incorrect" in row for row in rows)
    assert "     ValueError: running ModelNew at shape" in text  # a failure's line under its row
    assert "pattern=pointwise" in text

    assert candidates_main([str(out_dir), "L1/19", "L2/999"]) == 2  # the known one is still printed
    captured = capsys.readouterr()
    assert "L1/19 19_ReLU" in captured.out
    assert "L2/999: no record in" in captured.err and "level 2: none" in captured.err
    assert candidates_main([str(out_dir), "19"]) == 2
    assert "is not a problem: write it as L<level>/<id>" in capsys.readouterr().err
    assert candidates_main([str(out_dir.parent / "nowhere"), "L1/19"]) == 2
    assert "not a sweep folder" in capsys.readouterr().err


@needs_kernelbench
def test_records_without_candidates_still_load_resume_and_print(
    swept: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record written before `candidates` existed: summary, resume, --retry-failed and the CLI."""
    options = replace(swept["options"], out=tmp_path / "old")
    (options.out / "results").mkdir(parents=True)
    old = {k: v for k, v in swept["record"].items() if k != "candidates"}
    (options.out / "results" / "L1_019.json").write_text(json.dumps(old))
    assert write_summary(options.out)["overall"]["correct"] == 1
    assert Sweep(options).run().ran == []  # resumed: the problem is done
    problem = select_problems(options)[0]
    failed = {**old, "status": "run_failed", "correct": False}
    (options.out / "results" / "L1_019.json").write_text(json.dumps(failed))
    assert Sweep(replace(options, retry_failed=True))._needs_run(problem)
    assert candidates_main([str(options.out), "L1/19"]) == 0
    assert "no candidate list in this record" in capsys.readouterr().out


def test_entry_of_a_failure_is_one_short_line() -> None:
    candidate = Candidate(
        "class ModelNew: pass\n",
        "triton",
        "compiler_seed",
        "seed",
        metadata={
            "source": "inductor",
            "own_kernels": True,
            "fp32_precision": "tf32x3",
            "layout_optimization": False,
            "library_calls": [],
            "kernels": 3,
            "params": {f"S0_K{i}_XBLOCK": 64 for i in range(40)},
        },
    )
    graph = SearchGraph()
    graph.add_candidate(candidate)
    feedback = (
        "running ModelNew raised OutOfResources:\n"
        '  File "candidate.py", line 124, in forward\n    _conv_kernel[grid](\n'
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 2621440, "
        "Hardware limit: 232448. Reducing block sizes or `num_stages` may help." + " more" * 50
    )
    report = EvalReport(candidate.id, Status.COMPILE_ERROR, "OutOfResources", feedback, wall_s=3.14159)
    graph.record(candidate.id, report, FitnessValue(False, 0.0))
    item = entry(graph.node(candidate.id))
    assert item["what"] == {
        "own_kernels": True,
        "fp32_precision": "tf32x3",
        "kernels": 3,
        "layout_optimization": False,
    }  # params (the tunables) are left out: tune entries carry what they changed
    assert item["feedback"].startswith("running ModelNew raised OutOfResources: ... triton.runtime.errors")
    assert len(item["feedback"]) == FEEDBACK_CHARS and item["eval_s"] == 3.14
    assert item["id"] == candidate.id[:ID_CHARS] and "median_ms" not in item
    stack_dump = (
        "evaluation exceeded the 1 s limit and was killed\nstack when stopped:\n  File 'x', line 3\n  ..."
    )
    assert feedback_excerpt(stack_dump, "Timeout") == "evaluation exceeded the 1 s limit and was killed"


def test_an_entry_says_how_long_it_held_the_gpu_and_how_its_timing_ended() -> None:
    """Locked seconds (build, correctness, reference, timing), the wait for the lock, the timed calls
    over all shapes and the rules that stopped them: a throughput analysis needs no run directory."""
    candidate = Candidate("# timed\n", "triton", "tune")
    graph = SearchGraph()
    graph.add_candidate(candidate)
    latency = {
        "a": TimingStats(2.0, 2.0, 0.0, 2.0, 2.0, 20, "cuda_event", stopped_by="settled"),
        "b": TimingStats(1.0, 1.0, 0.0, 1.0, 1.0, 100, "cuda_event"),
    }
    phases = {
        "static": 0.3,
        "precompile": 0.4,
        "device_wait": 1.234,
        "build": 0.01,
        "correctness": 0.2,
        "timing": 0.25,
    }
    report = EvalReport(candidate.id, Status.OK, latency=latency, phase_s=phases, wall_s=2.5)
    graph.record(candidate.id, report, FitnessValue(True, 1.0))
    item = entry(graph.node(candidate.id))
    assert (item["locked_s"], item["wait_s"], item["timed_calls"], item["stopped_by"]) == (
        0.46,
        1.23,
        120,
        "settled",
    )
    raced = EvalReport(
        candidate.id, Status.OK, latency={"a": TimingStats(9.0, 9.0, 0.0, 9.0, 9.0, 2, stopped_by="race")}
    )
    graph.record(candidate.id, raced, FitnessValue(True, 0.2))
    item = entry(graph.node(candidate.id))
    assert item["stopped_by"] == "race" and "wait_s" not in item and "locked_s" not in item  # CPU: no lock


def test_an_out_of_memory_excerpt_keeps_who_held_the_memory() -> None:
    """A sweep's record keeps an excerpt of each failure: for a device out-of-memory error the part worth
    keeping (which process held what) comes last in PyTorch's message, past the excerpt's length."""
    message = (
        "reference Model failed on seed 118: OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. "
        "GPU 0 has a total capacity of 79.19 GiB of which 2.05 GiB is free. Including non-PyTorch memory, this "
        "process has 60.10 GiB memory in use. Process 842 has 16.60 GiB memory in use. Of the allocated memory "
        "58.02 GiB is allocated by PyTorch, and 1.49 GiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    )
    excerpt = feedback_excerpt(message, "OutOfMemoryError")
    assert excerpt.startswith("reference Model failed on seed 118: OutOfMemoryError")
    assert excerpt.endswith(
        "[asked 8.00 GiB; free 2.05 GiB of 79.19 GiB; this process 60.10 GiB (PyTorch 58.02 GiB allocated, "
        "1.49 GiB cached); process 842 16.60 GiB]"
    )
    assert feedback_excerpt("CUDA out of memory", "OutOfMemoryError") == "CUDA out of memory"
