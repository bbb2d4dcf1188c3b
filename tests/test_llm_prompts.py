"""Prompt layout per mode (pinned by snapshots), diagnosis statements and traffic estimates.

Snapshots live in tests/snapshots/prompt_<mode>.txt. After an intended prompt change, regenerate
them by hand with `python tests/test_llm_prompts.py` and review the diff.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kernelevolve.llm.diagnosis import diagnose, telling_line
from kernelevolve.llm.memory import Attempt
from kernelevolve.llm.prompts import (
    MODES,
    ParentInfo,
    PromptInputs,
    RetrievedDoc,
    backend_guidance,
    build_prompt,
)
from kernelevolve.platforms import load_platform
from kernelevolve.specs.traffic import IOSummary, estimate_traffic
from kernelevolve.types import (
    Baseline,
    EvalReport,
    FitnessValue,
    KernelSpec,
    ShapeCase,
    Status,
    TimingStats,
)

try:
    from llm_server import KERNEL, REFERENCE
except ImportError:  # tests/ imported as a package
    from tests.llm_server import KERNEL, REFERENCE

SNAPSHOTS = Path(__file__).parent / "snapshots"
SPEC = KernelSpec(
    name="scaled_relu",
    reference_source=REFERENCE,
    shapes=(ShapeCase("small", {"N": 4096}), ShapeCase("large", {"N": 1 << 24})),
    tags=("elementwise",),
    description="ReLU followed by a scalar multiply.",
)
H100 = load_platform("h100")
H200 = load_platform("h200")
IO = {
    "small": IOSummary(("float32[4096]",), ("float32[4096]",), 32768.0, None),
    "large": IOSummary(("float32[16777216]",), ("float32[16777216]",), 134217728.0, None),
}
GUIDANCE = "Use masks on every load and store."


def _t(ms: float) -> TimingStats:
    return TimingStats(ms, ms, 0.0, ms, ms, 100, "cuda_event")


BASELINES = {
    "small": Baseline(_t(0.006), _t(0.005)),
    "large": Baseline(_t(0.095), _t(0.081)),
}
OK_REPORT = EvalReport(
    "a" * 16, Status.OK, latency={"small": _t(0.0042), "large": _t(0.070)}, baselines=BASELINES
)
FAILED_REPORT = EvalReport(
    "b" * 16,
    Status.COMPILE_ERROR,
    error_name="CompilationError",
    feedback='Traceback (most recent call last):\n  File "k.py", line 9\ntriton.CompilationError: at 4:8: '
    "BLOCK must be a tl.constexpr",
)
ATTEMPTS = (
    Attempt(
        "c" * 16,
        "improve",
        "llm",
        "a" * 16,
        "Drop the mask on the load.",
        "incorrect: max abs error 1.5",
        "-    x = tl.load(x_ptr + offs, mask=mask)\n+    x = tl.load(x_ptr + offs)",
        3.0,
    ),
    Attempt("a reply", "improve", "llm", "a" * 16, "", "repeated " + "e" * 16 + " (same code)", "", 2.5),
)
DOCS = (
    RetrievedDoc(
        "technique-vectorize", "Vectorized loads", "Load 16 bytes per thread where alignment allows."
    ),
)


def _inputs(mode: str) -> PromptInputs:
    ok_parent = ParentInfo("a" * 16, KERNEL, "triton", OK_REPORT, FitnessValue(True, 1.36))
    other = ParentInfo("d" * 16, KERNEL.replace("1024", "256"), "triton", OK_REPORT, FitnessValue(True, 1.2))
    failed = ParentInfo("b" * 16, KERNEL.replace("BLOCK: tl.constexpr", "BLOCK"), "triton", FAILED_REPORT)
    parents = {
        "generate": (),
        "improve": (ok_parent,),
        "tune": (ok_parent,),
        "translate": (ok_parent,),
        "combine": (ok_parent, other),
        "repair": (failed,),
    }[mode]
    report = parents[0].report if parents else None
    moved = {k: v.bytes_moved for k, v in IO.items() if v.bytes_moved}
    diagnosis = diagnose(report, BASELINES, SPEC, H100, moved, None) if report else None
    return PromptInputs(
        mode=mode,
        spec=SPEC,
        platform=H100,
        backend="cute" if mode == "translate" else "triton",
        parents=parents,
        baselines=BASELINES,
        io=IO,
        diagnosis=diagnosis,
        attempts=ATTEMPTS if mode in ("improve", "repair", "tune") else (),
        retrieved=DOCS if mode != "tune" else (),
        guidance=GUIDANCE,
    )


@pytest.mark.parametrize("mode", MODES)
def test_prompt_matches_snapshot(mode: str) -> None:
    prompt = build_prompt(_inputs(mode))
    expected = (SNAPSHOTS / f"prompt_{mode}.txt").read_text(encoding="utf-8")
    assert prompt.text() == expected, f"prompt for {mode} changed; regenerate with python {__file__}"


def test_prompt_facts_per_mode() -> None:
    improve = build_prompt(_inputs("improve"))
    user = improve.messages[1]["content"]
    assert (
        improve.messages[0]["role"] == "system"
        and "class ModelNew(nn.Module)" in improve.messages[0]["content"]
    )
    assert "| large | 0.07 | 0.095 | 0.081 | 1.36x | 1.16x |" in user
    assert "memory-bound at 57% of peak bandwidth" in user
    assert "<<<<<<< SEARCH" in user and improve.retrieved == ("technique-vectorize",)
    repair = build_prompt(_inputs("repair")).messages[1]["content"]
    assert "BLOCK must be a tl.constexpr" in repair and "Status: compile_error (CompilationError)" in repair
    translate = build_prompt(_inputs("translate"))
    assert (
        translate.backend == "cute"
        and "translate this working Triton kernel into CuTe DSL" in translate.text()
    )
    generate = build_prompt(_inputs("generate")).messages[1]["content"]
    assert "## Parent" not in generate and "<<<<<<< SEARCH" not in generate
    assert "large: N=16777216; inputs float32[16777216]" in generate


def test_prompt_id_is_stable_and_content_based() -> None:
    a, b = build_prompt(_inputs("improve")), build_prompt(_inputs("improve"))
    assert a.id == b.id and len(a.id) == 16
    assert a.id != build_prompt(_inputs("tune")).id


def test_prompt_rejects_unknown_mode_and_missing_parents() -> None:
    with pytest.raises(ValueError, match="valid: generate, improve, combine, repair, tune, translate"):
        build_prompt(PromptInputs(mode="mutate", spec=SPEC, platform=H100, backend="triton"))
    with pytest.raises(ValueError, match="combine needs 2"):
        build_prompt(PromptInputs(mode="combine", spec=SPEC, platform=H100, backend="triton"))


def test_long_feedback_is_clipped_in_the_middle() -> None:
    long_report = EvalReport("b" * 16, Status.RUNTIME_ERROR, feedback="HEAD\n" + "x" * 10000 + "\nTAIL")
    parent = ParentInfo("b" * 16, KERNEL, "triton", long_report)
    text = build_prompt(PromptInputs("repair", SPEC, H100, "triton", parents=(parent,))).text()
    assert "HEAD" in text and "TAIL" in text and "characters cut" in text and len(text) < 9000


def test_non_strict_rules() -> None:
    inputs = _inputs("generate")
    strict = build_prompt(inputs).messages[0]["content"]
    loose = build_prompt(replace(inputs, strict=False)).messages[0]["content"]
    assert "no fallback to PyTorch" in strict and "PyTorch may be used for glue" in loose


def test_cpu_platform_facts_reach_the_prompt() -> None:
    cpu = load_platform("cpu")
    user = build_prompt(replace(_inputs("generate"), platform=cpu)).messages[1]["content"]
    assert "Inputs, parameters and outputs are CPU tensors and there is no GPU" in user
    assert "num_warps, num_stages and other launch settings are ignored" in user


def test_backend_guidance_always_has_text() -> None:
    assert backend_guidance("triton", H100).strip()
    assert backend_guidance("cute", H100).strip()
    assert backend_guidance("no_such_backend", H100) == ""


# ------------------------------------------------------------------------------ diagnosis


def _ok(ms: float, shape: str = "default") -> EvalReport:
    return EvalReport("e" * 16, Status.OK, latency={shape: _t(ms)})


ONE_SHAPE = KernelSpec(
    name="copy", reference_source=REFERENCE, shapes=(ShapeCase("default"),), tags=("memory",)
)


def test_memory_bound_statement() -> None:
    # 1.824e9 bytes in 1 ms = 1.824 TB/s = 38% of the H200's 4.8 TB/s.
    base = {"default": Baseline(_t(2.0))}
    diagnosis = diagnose(_ok(1.0), base, ONE_SHAPE, H200, 1.824e9, None)
    assert diagnosis.kind == "memory_bound"
    assert diagnosis.statement == "memory-bound at 38% of peak bandwidth (1.8 of 4.8 TB/s); 2.00x eager"
    assert "bandwidth" in diagnosis.query and "memory" in diagnosis.query


def test_launch_bound_statement() -> None:
    diagnosis = diagnose(_ok(0.004), {}, ONE_SHAPE, H100, 4096.0, None)
    assert diagnosis.kind == "launch_bound" and diagnosis.statement == "launch-bound (0.004 ms per call)"
    # On the CPU platform there is no launch-bound verdict: interpreter timings say nothing of it.
    assert diagnose(_ok(0.004), {}, ONE_SHAPE, load_platform("cpu"), 4096.0, None).kind == "memory_bound"


def test_compute_bound_statements() -> None:
    gemm = KernelSpec(name="gemm", reference_source=REFERENCE, dtype="bfloat16", tags=("gemm",))
    m = n = k = 8192
    moved, flops = 2.0 * (m * k + k * n + m * n), 2.0 * m * n * k
    slow = diagnose(_ok(40.0), {}, gemm, H100, moved, flops)  # 27 TFLOP/s: below the fp32 CUDA-core peak
    assert slow.kind == "no_tensor_cores"
    assert slow.statement.startswith(
        "compute-bound without tensor cores (27.5 TFLOP/s; bf16 tensor-core peak 989"
    )
    assert "tensor cores" in slow.query
    fast = diagnose(_ok(2.0), {}, gemm, H100, moved, flops)
    assert (
        fast.kind == "compute_bound"
        and fast.statement == "compute-bound at 56% of peak bf16 (550 of 989 TFLOP/s)"
    )


def test_failure_statements() -> None:
    assert diagnose(FAILED_REPORT, {}, SPEC, H100, None, None).statement == (
        "compile error: triton.CompilationError: at 4:8: BLOCK must be a tl.constexpr"
    )
    wrong = EvalReport("f" * 16, Status.INCORRECT, max_abs_error=0.25, flags=("guard_band",))
    diagnosis = diagnose(wrong, {}, SPEC, H100, None, None)
    assert diagnosis.kind == "incorrect"
    assert (
        diagnosis.statement == "incorrect: max abs error 0.25 (atol 0.0001, rtol 0.0001); flags: guard_band"
    )
    assert diagnose(EvalReport("g" * 16, Status.TIMEOUT), {}, SPEC, H100, None, None).statement == "timeout"


def test_largest_shape_is_judged_and_unknown_traffic_says_so() -> None:
    report = EvalReport(
        "h" * 16, Status.OK, latency={"small": _t(0.05), "large": _t(0.5)}, baselines=BASELINES
    )
    diagnosis = diagnose(report, {}, SPEC, H100, None, None)
    assert diagnosis.kind == "timing_only"
    assert diagnosis.statement == "0.5 ms per call at shape large; bytes and FLOPs unknown; 0.19x eager"


def test_telling_line_prefers_the_traceback_end() -> None:
    assert telling_line("Traceback (most recent call last):\n  File x\nValueError: bad") == "ValueError: bad"
    assert telling_line("first\nsecond") == "first"
    assert telling_line("") == ""


def test_estimate_traffic_runs_the_reference_on_meta() -> None:
    pytest.importorskip("torch")
    source = (
        REFERENCE.replace("torch.relu(x) * self.scale", "x @ self.w")
        .replace("self.scale = scale", "self.w = nn.Parameter(torch.randn(N, 64))")
        .replace("torch.randn(N)", "torch.randn(32, N)")
    )
    spec = KernelSpec(name="mm", reference_source=source, shapes=(ShapeCase("s", {"N": 128}),))
    moved, flops = estimate_traffic(spec, spec.shapes[0])
    assert moved == 4.0 * (32 * 128 + 128 * 64 + 32 * 64)
    assert flops == 2.0 * 32 * 128 * 64
    elementwise = KernelSpec(
        name="relu", reference_source=REFERENCE, dtype="float16", shapes=(ShapeCase("s"),)
    )
    assert estimate_traffic(elementwise, elementwise.shapes[0]) == (2.0 * 1024 * 2, None)
    broken = KernelSpec(name="broken", reference_source="raise RuntimeError('no')", shapes=(ShapeCase("s"),))
    assert estimate_traffic(broken, broken.shapes[0]) == (None, None)


def _write_snapshots() -> None:
    SNAPSHOTS.mkdir(exist_ok=True)
    for mode in MODES:
        (SNAPSHOTS / f"prompt_{mode}.txt").write_text(build_prompt(_inputs(mode)).text(), encoding="utf-8")
        print(f"wrote {SNAPSHOTS / f'prompt_{mode}.txt'}", file=sys.stderr)


if __name__ == "__main__":
    _write_snapshots()
