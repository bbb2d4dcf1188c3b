"""CuTe candidates through the real harness on the CPU platform: compiled, not run, with the reason recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from kernelevolve.eval.local import LocalEvaluator
from kernelevolve.platforms import load_platform
from kernelevolve.specs.loading import resolve_spec
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, Status
from kernelevolve.variation.template_library import templates_for

if TYPE_CHECKING:
    from kernelevolve.eval.local import LocalEvaluator

pytest.importorskip("cutlass.cute")


def test_cute_template_compiles_and_a_broken_one_is_a_compile_error(cpu_evaluator: LocalEvaluator) -> None:
    platform = load_platform("cpu")
    spec = resolve_spec("softmax", platform)
    template = templates_for(spec, "cute")[0]
    good = Candidate(source=template.source, backend="cute", operator="template")
    # A type error inside the traced kernel body: only cute.compile can find it.
    broken_source = template.source.replace("cute.arch.thread_idx()", "cute.arch.thread_idx() + 'x'", 1)
    assert broken_source != template.source
    broken = Candidate(source=broken_source, backend="cute", operator="template")
    settings = EvalSettings(correctness_trials=1, timing_trials=1, warmup_trials=0, timeout_s=300)
    good_report = cpu_evaluator.submit(EvalRequest(good, spec, "cpu", settings)).result()
    broken_report = cpu_evaluator.submit(EvalRequest(broken, spec, "cpu", settings)).result()
    assert good_report.status is Status.COMPILED_ONLY, good_report.feedback
    assert "Execution skipped" in good_report.feedback and "sm_" in good_report.feedback
    assert broken_report.status is Status.COMPILE_ERROR, broken_report.feedback
    assert not good_report.latency
