"""KernelBench's own evaluator as a second judge: its process (stubs, request and response, failures as
verdicts), a run's winners into a sweep record, the summary's agreement section, the verify and sweep
options. KernelBench's evaluator asserts CUDA, so on CPU the real one only shows that it imports and
says so; the rest runs against a stand-in `kernelbench` package. The GPU test runs the real one."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import textwrap
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.bench.kernelbench.judge import (
    JudgeSettings,
    judge_kernel,
    kernelbench_commit,
    kernelbench_src,
)
from kernelevolve.bench.kernelbench.judge.second_judge import KernelBenchJudge
from kernelevolve.bench.kernelbench.judge.values import (
    COMPILE_ERROR,
    CORRECT,
    INCORRECT,
    JUDGE_FAILED,
    KernelBenchVerdict,
)
from kernelevolve.bench.kernelbench.judge.winners import RECORD_KEY, judged_problem
from kernelevolve.bench.sweep.summary import summarize
from kernelevolve.bench.sweep.summary_markdown import summary_markdown
from kernelevolve.types import Candidate, EvalReport, KernelSpec, Status
from tests.conftest import ADD_REFERENCE, add_kernel_source
from tests.kernelbench_data import KERNELBENCH_SRC, needs_kernelbench_src
from tests.sweep_options import problem_record

# A stand-in for KernelBench's evaluator: logs each call's arguments, then answers by markers in the kernel.
_FAKE_EVAL = """
import json
import os


def get_torch_dtype_from_string(precision):
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


class Result:
    def __init__(self, **fields):
        self.compiled, self.correctness, self.runtime, self.metadata = True, False, -1.0, {}
        self.__dict__.update(fields)


def eval_kernel_against_ref(original_model_src, custom_model_src, **kwargs):
    with open(os.environ["FAKE_KB_CALLS"], "a") as log:
        call = {"reference": original_model_src, "kernel": custom_model_src}
        log.write(json.dumps({**call, **{k: str(v) for k, v in kwargs.items()}}) + "\\n")
    if "NOLOAD" in custom_model_src:
        return Result(compiled=False, metadata={"compilation_error_name": "builtins.SyntaxError", "compilation_error": "bad"})
    if "WRONG" in custom_model_src:
        metadata = {"correctness_issue": "Output mismatch", "max_difference": ["0.500000"], "correctness_trials": "(0 / 5)"}
        return Result(metadata=metadata)
    return Result(correctness=True, runtime=0.5, metadata={"correctness_trials": "(5 / 5)", "hardware": "Fake GPU"})
"""
_FAKE_TIMING = """
def measure_ref_program_time(name, source, **kwargs):
    return {"mean": 2.0}
"""


def fake_kernelbench(root: Path, eval_source: str = _FAKE_EVAL, timing_source: str = _FAKE_TIMING) -> Path:
    """A checkout at `root` whose src/kernelbench is the stand-in (or `eval_source`); returns `root`."""
    package = root / "src" / "kernelbench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "eval.py").write_text(textwrap.dedent(eval_source))
    (package / "timing.py").write_text(textwrap.dedent(timing_source))
    return root


@pytest.fixture
def fake_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_KB_CALLS", str(calls))
    return calls


def _calls(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


# ------------------------------------------------------------------------------------ the checkout
def test_the_path_is_a_checkout_its_src_or_its_package_and_a_git_checkout_names_its_commit(
    tmp_path: Path,
) -> None:
    root = fake_kernelbench(tmp_path / "KernelBench")
    src = root / "src"
    assert kernelbench_src(root) == src.resolve()
    assert kernelbench_src(src) == src.resolve()
    assert kernelbench_src(src / "kernelbench") == src.resolve()
    with pytest.raises(
        FileNotFoundError, match="no KernelBench evaluator at .*nowhere.*src/kernelbench/eval.py"
    ):
        kernelbench_src(tmp_path / "nowhere")
    assert kernelbench_commit(src.resolve()) is None  # not a git repository
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    kernelbench_commit.cache_clear()
    assert kernelbench_commit(src.resolve()) == head
    # a copy inside another project's repository: that repository's commit says nothing about KernelBench
    inner = fake_kernelbench(root / "vendored" / "kb")
    assert kernelbench_commit((inner / "src").resolve()) is None


# ---------------------------------------------------------------------------- the judge's process
@needs_kernelbench_src
def test_the_real_evaluator_imports_with_stubs_and_without_cuda_is_a_recorded_failure() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("on a GPU KernelBench's evaluator runs (the gpu test)")
    verdict = judge_kernel(add_kernel_source(), ADD_REFERENCE, JudgeSettings(str(KERNELBENCH_SRC)))
    assert verdict.status == JUDGE_FAILED and not verdict.correct
    # it imported (stubs where its LLM clients are not installed) and then asserted CUDA itself
    assert verdict.error == "AssertionError: CUDA is not available, cannot run Eval"
    missing = [m for m in ("dotenv", "openai", "litellm", "pydantic") if importlib.util.find_spec(m) is None]
    assert set(missing) <= set(verdict.stubbed)
    assert verdict.kernelbench_path == str(KERNELBENCH_SRC.resolve())


def test_an_import_error_a_crash_and_a_hang_are_recorded_failures(tmp_path: Path) -> None:
    settings = JudgeSettings(str(tmp_path / "absent"))
    missing = judge_kernel("", ADD_REFERENCE, settings)
    assert missing.status == JUDGE_FAILED and missing.error.startswith("no KernelBench evaluator at")

    broken = fake_kernelbench(tmp_path / "broken", "import flash_attn_that_is_not_there\n")
    verdict = judge_kernel("", ADD_REFERENCE, JudgeSettings(str(broken)))
    assert verdict.status == JUDGE_FAILED
    assert verdict.error.startswith(f"cannot import kernelbench.eval from {(broken / 'src').resolve()}: ")
    assert verdict.error.endswith("ModuleNotFoundError: No module named 'flash_attn_that_is_not_there'")

    crashing = fake_kernelbench(
        tmp_path / "crashing", "import os\nprint('about to crash', flush=True)\nos._exit(3)\n"
    )
    verdict = judge_kernel("", ADD_REFERENCE, JudgeSettings(str(crashing)))
    assert verdict.status == JUDGE_FAILED
    assert verdict.error == "the judge process exited with code 3 without a verdict: about to crash"

    pid_file = tmp_path / "grandchild.pid"
    hanging = fake_kernelbench(
        tmp_path / "hanging",
        f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(600)
        """,
    )
    start = time.monotonic()
    verdict = judge_kernel("", ADD_REFERENCE, JudgeSettings(str(hanging), timeout_s=3.0))
    assert verdict.status == JUDGE_FAILED and verdict.error == "timed out after 3 s"
    assert time.monotonic() - start < 20
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _running(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(grandchild)  # killed with its whole group, not left behind


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed orphan waits for init to reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_verdicts_round_trip_and_read_as_one_line() -> None:
    verdict = KernelBenchVerdict(
        CORRECT,
        True,
        True,
        runtime_ms=0.5,
        reference_ms=2.0,
        correctness_trials="(5 / 5)",
        stubbed=("dotenv",),
    )
    data = json.loads(json.dumps(verdict.to_json()))
    assert data["speedup"] == 4.0 and KernelBenchVerdict.from_json(data) == verdict
    assert verdict.line() == "correct (5 / 5), 0.5 ms vs its reference's 2 ms: 4.00x"
    assert KernelBenchVerdict.failed("boom\ntraceback").line() == "could not judge: boom"
    assert KernelBenchVerdict(INCORRECT, True, error="Output mismatch").speedup is None


# --------------------------------------------------------------------------- a run's winners
def _run_dir(root: Path, best: Candidate, strict: Candidate | None) -> Path:
    """A run directory as a search leaves it, as far as the judge reads it."""
    root.mkdir(parents=True)
    spec = KernelSpec(name="tiny_add", reference_source=ADD_REFERENCE)
    (root / "spec.json").write_text(json.dumps(spec.to_json()))
    lines = [
        {"type": "candidate", **c.to_json()}
        for c in {best.id: best, **({strict.id: strict} if strict else {})}.values()
    ]
    lines.append({"type": "event", "kind": "baselines", "payload": {}})
    (root / "graph.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = {"best": {"id": best.id}, "best_strict": {"id": strict.id} if strict else None}
    (root / "results.json").write_text(json.dumps(results))
    return root


def test_a_sweep_record_gets_its_winners_verdicts(tmp_path: Path, fake_calls: Path) -> None:
    checkout = fake_kernelbench(tmp_path / "KernelBench")
    best = Candidate(add_kernel_source(), "triton", "template")
    strict = Candidate(add_kernel_source() + "# WRONG\n", "cute", "template")
    run_dir = _run_dir(tmp_path / "run", best, strict)

    def run(cfg: dict[str, Any], problem: Any) -> dict[str, Any]:
        return {"problem": "L1/1", "run_dir": str(run_dir), "wall_s": 1.0}

    cfg = {"platform": {"devices": ["cuda:1"]}}
    record = judged_problem(run, JudgeSettings(str(checkout), correct_trials=3, perf_trials=7), cfg, None)
    judged = record[RECORD_KEY]
    assert judged["error"] is None
    assert judged["best"]["candidate"] == best.id and judged["best"]["status"] == CORRECT
    assert judged["best"]["runtime_ms"] == 0.5 and judged["best"]["reference_ms"] == 2.0
    assert judged["best"]["speedup"] == 4.0 and judged["best"]["hardware"] == "Fake GPU"
    assert judged["best"]["kernelbench_path"] == str((checkout / "src").resolve())
    assert judged["strict"]["candidate"] == strict.id and judged["strict"]["status"] == INCORRECT
    assert judged["strict"]["error"] == "Output mismatch (max difference 0.500000)"
    assert judged["strict"]["reference_ms"] is None  # the reference is timed for a correct kernel only
    assert record["wall_s"] > 1.0  # the judging counts toward the problem's time
    calls = _calls(fake_calls)
    assert [c["kernel"] for c in calls] == [best.source, strict.source]
    assert {c["reference"] for c in calls} == {ADD_REFERENCE}
    assert [c["backend"] for c in calls] == ["triton", "cute"]
    assert calls[0]["device"] == "cuda:1" and calls[0]["num_correct_trials"] == "3"
    assert calls[0]["num_perf_trials"] == "7" and calls[0]["measure_performance"] == "True"
    assert calls[0]["precision"] == "torch.float32"
    json.dumps(record)  # the record stays JSON

    # one winner that is both is judged once; a failed run (no run directory) is left alone
    fake_calls.unlink()
    both = _run_dir(tmp_path / "run2", best, best)
    record = judged_problem(lambda c, p: {"run_dir": str(both)}, JudgeSettings(str(checkout)), {}, None)
    assert record[RECORD_KEY]["best"] == record[RECORD_KEY]["strict"] and len(_calls(fake_calls)) == 1
    assert RECORD_KEY not in judged_problem(
        lambda c, p: {"status": "run_failed"}, JudgeSettings("x"), {}, None
    )


def test_a_kernel_that_does_not_load_is_a_compile_error(tmp_path: Path, fake_calls: Path) -> None:
    checkout = fake_kernelbench(tmp_path / "KernelBench")
    verdict = judge_kernel("# NOLOAD\n", ADD_REFERENCE, JudgeSettings(str(checkout)))
    assert verdict.status == COMPILE_ERROR and not verdict.compiled
    assert verdict.error == "builtins.SyntaxError: bad"


# ----------------------------------------------------------------------------------- the summary
def _judged(status: str, speedup: float | None = None, candidate: str = "c1") -> dict[str, Any]:
    verdict = KernelBenchVerdict(
        status,
        compiled=status != COMPILE_ERROR,
        correct=status == CORRECT,
        runtime_ms=1.0 if speedup else None,
        reference_ms=speedup,
        error="" if status == CORRECT else "Output mismatch",
    )
    return {"candidate": candidate, **verdict.to_json()}


def test_the_summary_sets_its_verdicts_and_speedups_beside_ours() -> None:
    records = [
        problem_record(
            "L1/1",
            speedup_vs_eager=2.0,
            best_ms=1.0,
            mode="strict",
            **{RECORD_KEY: {"best": _judged(CORRECT, 1.5), "strict": _judged(CORRECT, 1.5)}},
        ),
        problem_record(
            "L1/2",
            speedup_vs_eager=8.0,
            best_ms=1.0,
            mode="strict",
            **{RECORD_KEY: {"best": _judged(CORRECT, 6.0), "strict": _judged(CORRECT, 6.0)}},
        ),
        problem_record(
            "L1/3",
            speedup_vs_eager=1.2,
            mode="strict",
            **{RECORD_KEY: {"best": _judged(INCORRECT), "strict": _judged(INCORRECT)}},
        ),
        problem_record(
            "L1/4",
            speedup_vs_eager=1.1,
            mode="strict",
            **{
                RECORD_KEY: {
                    "best": KernelBenchVerdict.failed("timed out after 600 s").to_json(),
                    "strict": KernelBenchVerdict.failed("timed out after 600 s").to_json(),
                }
            },
        ),
        problem_record("L1/5", "no_correct_kernel", mode="strict"),
        problem_record(
            "L1/6", speedup_vs_eager=1.0, mode="strict"
        ),  # judged before the option existed: not counted
    ]
    for record in records:
        record["strict"] = {"correct": record["correct"], "speedup_vs_eager": record.get("speedup_vs_eager")}
    summary = summarize(records)
    group = summary["kernelbench_judge"]["modes"]["strict"]
    assert group == {
        "judged": 4,
        "correct_by_us": 4,
        "correct_by_both": 2,
        "incorrect_by_kernelbench": 1,
        "not_judged": 1,
        "both_timed": 2,
        "geomean_speedup_ours": pytest.approx(4.0),
        "geomean_speedup_kernelbench": pytest.approx(3.0),
    }
    assert list(summary["kernelbench_judge"]) == ["modes", "rows"]
    assert [row["problem"] for row in summary["kernelbench_judge"]["rows"]] == [
        "L1/1",
        "L1/2",
        "L1/3",
        "L1/4",
    ]
    markdown = summary_markdown(summary)
    assert "## KernelBench's own evaluator" in markdown
    assert "| strict | 4 | 4 | 2 | 1 | 1 | 4.00x | 3.00x |" in markdown
    assert "| L1/1 | strict | correct | 2.00x | 1.50x | 1 | 1 |" in markdown
    assert (
        "| L1/4 | strict | judge_failed | 1.10x | - |" in markdown and "timed out after 600 s |" in markdown
    )
    assert summarize([problem_record("L1/1")])["kernelbench_judge"] is None
    assert "KernelBench's own evaluator" not in summary_markdown(summarize([problem_record("L1/1")]))


def test_a_permissive_sweep_sets_both_winners_beside_ours() -> None:
    record = problem_record(
        "L2/1",
        mode="permissive",
        speedup_vs_eager=3.0,
        strict={"correct": True, "speedup_vs_eager": 1.5},
        permissive={"correct": True, "speedup_vs_eager": 3.0},
        **{RECORD_KEY: {"best": _judged(CORRECT, 2.5, "lib"), "strict": _judged(INCORRECT, None, "own")}},
    )
    modes = summarize([record])["kernelbench_judge"]["modes"]
    assert (
        modes["permissive"]["correct_by_both"] == 1
        and modes["permissive"]["geomean_speedup_kernelbench"] == 2.5
    )
    assert modes["strict"]["correct_by_both"] == 0 and modes["strict"]["incorrect_by_kernelbench"] == 1


# -------------------------------------------------------------------------------- the options
def test_verify_takes_the_judge_path_and_prints_its_verdict_beside_ours(
    tmp_path: Path, fake_calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelevolve.platforms import load_platform
    from kernelevolve.verify import format_result, main, parse_args, verify

    args = parse_args(["k.py", "+spec=x", "kernelbench.judge=/kb", "kernelbench.judge_timeout_s=30"])
    assert args.judge == KernelBenchJudge(JudgeSettings("/kb", 30.0))
    assert parse_args(["k.py", "+spec=x"]).judge is None
    kernel = tmp_path / "k.py"
    kernel.write_text(add_kernel_source())
    assert main([str(kernel), "+spec=softmax", f"kernelbench.judge={tmp_path / 'nope'}"]) == 2

    class OwnVerdict:  # our harness's side, stood in for: the judge is what is under test here
        def __init__(self, *args: Any) -> None:
            pass

        def __enter__(self) -> OwnVerdict:
            return self

        def __exit__(self, *exc: Any) -> None:
            return None

        def submit(self, request: Any) -> Future[EvalReport]:
            future: Future[EvalReport] = Future()
            future.set_result(EvalReport(request.candidate.id, Status.INCORRECT, feedback="ours says no"))
            return future

        def baselines(self, spec: Any, platform: str) -> dict[str, Any]:
            return {}

    monkeypatch.setattr("kernelevolve.eval.local.LocalEvaluator", OwnVerdict)
    spec = KernelSpec(name="tiny_add", reference_source=ADD_REFERENCE)
    platform = load_platform("cpu")
    from kernelevolve.verify import platform_settings

    checkout = fake_kernelbench(tmp_path / "KernelBench")
    result = verify(
        add_kernel_source(),
        spec,
        platform,
        platform_settings("cpu"),
        judge=KernelBenchJudge(JudgeSettings(str(checkout))),
    )
    assert not result.ok and result.second is not None and result.second.correct
    text = format_result(result, spec, platform)
    assert "verdict:  INCORRECT" in text
    assert "KernelBench's evaluator: correct (5 / 5), 0.5 ms vs its reference's 2 ms: 4.00x" in text
    assert f"from {(checkout / 'src').resolve()}" in text
    assert _calls(fake_calls)[0]["device"] == "cuda:0"


def test_the_sweep_option_is_parsed_and_a_wrong_path_stops_the_sweep_at_once(tmp_path: Path) -> None:
    from kernelevolve.bench.sweep.cli import build_parser, main

    args = build_parser().parse_args(
        ["--out", "o", "--kernelbench-judge", "/kb", "--kernelbench-judge-timeout-s", "9"]
    )
    assert args.kernelbench_judge == Path("/kb") and args.kernelbench_judge_timeout_s == 9.0
    assert build_parser().parse_args(["--out", "o"]).kernelbench_judge is None
    out = tmp_path / "sweep"
    assert main(["--out", str(out), "--kernelbench-judge", str(tmp_path / "nope")]) == 2
    assert not out.exists()  # nothing ran


# ------------------------------------------------------------------------------------------ GPU
@pytest.mark.gpu
@needs_kernelbench_src
def test_a_triton_kernel_through_kernelbench_on_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    settings = JudgeSettings(str(KERNELBENCH_SRC), timeout_s=300.0, perf_trials=20)
    verdict = judge_kernel(add_kernel_source(), ADD_REFERENCE, settings)
    assert verdict.status == CORRECT, verdict.error
    assert verdict.compiled and verdict.correct and verdict.correctness_trials == "(5 / 5)"
    assert verdict.runtime_ms is not None and verdict.runtime_ms > 0
    assert verdict.reference_ms is not None and verdict.reference_ms > 0 and verdict.speedup is not None
    assert verdict.hardware
    wrong = judge_kernel(add_kernel_source(result="x * y"), ADD_REFERENCE, settings)
    assert wrong.status == INCORRECT and not wrong.correct and "mismatch" in wrong.error
