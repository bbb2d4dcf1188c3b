"""Every reward hack and every known-good kernel through the real harness, asserting the exact verdict.

CPU: `harness.evaluate` in this process on platform cpu, Triton under the interpreter (triton reads
TRITON_INTERPRET at each @triton.jit decoration, i.e. when the harness loads the candidate), plus
one pass through `LocalEvaluator`'s child process. GPU (marked `gpu`, skipped without CUDA): the
same cases compiled for real, including the hacks that only a GPU can express (side streams).

A case whose header has ``known-issue:`` is one the harness currently gets wrong; it runs as a
strict xfail, so fixing the harness turns it into a failure that asks for the marker to go.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

import pytest

from kernelevolve.eval.harness import evaluate
from kernelevolve.eval.runner_client import Sandbox
from kernelevolve.platforms import Platform, load_platform
from kernelevolve.types import Candidate, EvalReport, EvalRequest, EvalSettings, Status
from tests.adversarial.spec_fixtures import CandidateCase, load_cases, spec

SETTINGS = EvalSettings(
    correctness_trials=2, timing_trials=2, warmup_trials=1, timeout_s=60, measure_compile_baseline=False
)
CASES = load_cases("hacks") + load_cases("good")


def _params(gpu: bool) -> Iterator[object]:
    for case in CASES:
        if not case.runnable or (case.needs_gpu and not gpu):
            continue
        applies = case.known_issue and case.known_issue_where in ("both", "gpu" if gpu else "cpu")
        marks = [pytest.mark.xfail(strict=True, reason=case.known_issue)] if applies else []
        yield pytest.param(case, id=case.name, marks=marks)


def request_for(case: CandidateCase, platform: Platform) -> EvalRequest:
    candidate = Candidate(case.source, case.backend, operator="adversarial-test")
    return EvalRequest(candidate, spec(case.spec_name), platform.name, replace(SETTINGS, strict=case.strict))


def static_codes(report: EvalReport) -> set[str]:
    """Issue codes the harness listed in its REJECTED_STATIC feedback ("- code (line n): ...")."""
    return set(re.findall(r"^- (\w+)", report.feedback, re.MULTILINE))


def assert_verdict(case: CandidateCase, report: EvalReport) -> None:
    summary = f"{case.name}: got {report.status.value}/{report.error_name}: {report.feedback[:1500]}"
    assert report.status is case.expected_status, summary
    if case.expected_status is Status.REJECTED_STATIC:
        assert case.expected_detail <= static_codes(report), summary
    elif case.expected_status is Status.OK:
        assert set(report.latency) == {s.name for s in spec(case.spec_name).shapes}, summary
        # fp32 fixtures: 1e-3; a half-precision spec's honest kernel may differ by a rounding of the output
        bound = max(1e-3, 4 * spec(case.spec_name).atol)
        assert report.max_abs_error is not None and report.max_abs_error <= bound, summary
    else:
        assert report.error_name in case.expected_detail, summary


@pytest.fixture
def interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.mark.parametrize("case", list(_params(gpu=False)))
def test_case_on_cpu(case: CandidateCase, cpu_platform: Platform, interpreted: None) -> None:
    assert_verdict(case, evaluate(request_for(case, cpu_platform), cpu_platform))


def _runtime_params(gpu: bool) -> Iterator[object]:
    for case in load_cases("hacks"):
        if case.runnable and (gpu or not case.needs_gpu) and case.runtime_verdict_on(gpu) is not None:
            yield pytest.param(case, id=case.name)


def assert_runtime_verdict(
    case: CandidateCase, platform: Platform, gpu: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defence in depth: with the static checks switched off, the judge and the runner alone still reject
    every hack (or it gains nothing, `runtime: ok`): a hack that slips past the static checks' spelling
    rules meets a verdict computed outside its process."""
    from kernelevolve.eval import harness

    monkeypatch.setattr(harness, "_static_stage", lambda *args, **kwargs: None)
    verdict = case.runtime_verdict_on(gpu)
    assert verdict is not None
    status, detail = verdict
    report = evaluate(request_for(case, platform), platform)
    summary = f"{case.name}: got {report.status.value}/{report.error_name}: {report.feedback[:1500]}"
    assert report.status is status, summary
    if detail:
        assert report.error_name in detail, summary


@pytest.mark.parametrize("case", list(_runtime_params(gpu=False)))
def test_runtime_verdict_without_static_checks(
    case: CandidateCase, cpu_platform: Platform, interpreted: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_runtime_verdict(case, cpu_platform, False, monkeypatch)


def test_verdicts_hold_across_the_child_process(cpu_platform: Platform, interpreted: None) -> None:
    """The same verdicts through LocalEvaluator (spawned worker) for one hack of each kind and a good kernel."""
    from kernelevolve.eval.local import LocalEvaluator

    chosen = {"partial_write", "patch_perf_counter", "zero_inputs", "elementwise_relu"}
    cases = [c for c in CASES if c.name in chosen]
    assert len(cases) == len(chosen)
    evaluator = LocalEvaluator(cpu_platform, SETTINGS)
    try:
        futures = [(case, evaluator.submit(request_for(case, cpu_platform))) for case in cases]
        for case, future in futures:
            assert_verdict(case, future.result(timeout=300))
    finally:
        evaluator.close()


def _gpu_platform() -> Platform:
    import torch

    name = torch.cuda.get_device_name(0)
    for candidate in ("h200", "h100", "a100"):
        if candidate.upper() in name.upper():
            return load_platform(candidate)
    return load_platform("h100")


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(_params(gpu=True)))
def test_case_on_gpu(case: CandidateCase, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # compile for real
    platform = _gpu_platform()
    assert_verdict(case.on_gpu(), evaluate(request_for(case, platform), platform))


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(_runtime_params(gpu=True)))
def test_runtime_verdict_without_static_checks_on_gpu(
    case: CandidateCase, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert_runtime_verdict(case, _gpu_platform(), True, monkeypatch)


def test_helper_process_found_at_a_check(
    cpu_platform: Platform, interpreted: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a runner may start processes (GPUs: Triton runs its compilers as processes), one alive while
    its timed calls are checked is a violation: it was not frozen with the runner. Here the CPU runner's
    block on new processes is lifted to show the judge finds it."""
    from kernelevolve.eval import harness, runner_client

    case = next(c for c in load_cases("hacks") if c.name == "helper_process_while_timed")
    monkeypatch.setattr(harness, "_static_stage", lambda *args, **kwargs: None)
    monkeypatch.setattr(
        runner_client,
        "Sandbox",
        lambda *args, **kwargs: Sandbox(*args, **{**kwargs, "single_process": False}),
    )
    report = evaluate(request_for(case, cpu_platform), cpu_platform)
    assert (report.status, report.error_name) == (Status.RUNTIME_ERROR, "escaped_process"), report.feedback
    assert "while its timed calls were checked" in report.feedback
