"""A problem keeps the dtype its inputs are built in: a KernelBench-form fp16 problem is checked as an fp16
problem (KernelBench's 1e-2 tolerance, half-precision inputs in the harness), a spec without `dtype` takes
its reference's, and a compiler seed for a half-precision problem passes the harness on CPU."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kernelevolve.bench.kernelbench.problems import load_problem, problem_to_spec
from kernelevolve.platforms import load_platform
from kernelevolve.specs import reference
from kernelevolve.specs.built_dtype import built_dtype
from kernelevolve.specs.loading import load_spec_file
from kernelevolve.specs.reference_module import load_reference_module
from kernelevolve.types import EvalRequest, EvalSettings, Status
from tests.gpu import needs_cuda

if TYPE_CHECKING:
    from kernelevolve.eval.local import LocalEvaluator

torch = pytest.importorskip("torch")


def _problem(dtype: str) -> str:
    return (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self, dim):\n        super().__init__()\n        self.scale = nn.Parameter(torch.ones(dim))\n\n"
        "    def forward(self, x, y):\n        return torch.relu(x * self.scale + y)\n\n\n"
        "batch = 8\ndim = 48\n\n\ndef get_inputs():\n"
        f"    return [torch.randn(batch, dim, dtype={dtype}), torch.randn(batch, dim, dtype={dtype})]\n\n\n"
        "def get_init_inputs():\n    return [dim]\n"
    )


@pytest.mark.parametrize(
    ("written", "expected"),
    [("torch.float16", "float16"), ("torch.bfloat16", "bfloat16"), ("torch.float32", "float32")],
)
def test_a_kernelbench_form_problem_keeps_its_dtype(tmp_path: Path, written: str, expected: str) -> None:
    path = tmp_path / "problems.jsonl"
    row = {"level": 1, "problem_id": 7, "name": "7_Half", "code": _problem(written)}
    path.write_text(json.dumps(row) + "\n")
    spec = problem_to_spec(load_problem(path, 1, 7))
    assert spec.dtype == expected
    assert spec.atol == spec.rtol == (1e-4 if expected == "float32" else 1e-2)
    module = load_reference_module(spec.reference_source)
    inputs = reference.make_inputs(module, 0, "cpu", reference.torch_dtype(spec.dtype))
    assert {t.dtype for t in inputs} == {getattr(torch, expected)}


def test_parameters_say_the_dtype_where_no_input_is_floating() -> None:
    code = _problem("torch.float16").replace(
        "torch.randn(batch, dim, dtype=torch.float16), torch.randn(batch, dim, dtype=torch.float16)",
        "torch.randint(0, 4, (batch, dim))",
    )
    code = code.replace("torch.ones(dim)", "torch.ones(dim, dtype=torch.bfloat16)")
    assert built_dtype(code) == "bfloat16"
    assert built_dtype(code.replace(", dtype=torch.bfloat16", "")) == "float32"
    assert built_dtype(_problem("torch.float64")) == "float32"  # not one the harness takes: as before


def test_a_spec_without_dtype_takes_its_references(tmp_path: Path) -> None:
    (tmp_path / "ref.py").write_text(_problem("torch.bfloat16"))
    (tmp_path / "op.yaml").write_text("name: half_op\nreference: ref.py\nshapes:\n  - {name: s, batch: 4}\n")
    spec = load_spec_file(tmp_path / "op.yaml", load_platform("cpu"))
    assert spec.dtype == "bfloat16" and spec.atol == 1e-2
    (tmp_path / "op.yaml").write_text("name: half_op\nreference: ref.py\ndtype: float32\n")
    assert load_spec_file(tmp_path / "op.yaml", load_platform("cpu")).dtype == "float32"  # said: kept


@pytest.mark.parametrize("written", ["torch.float16", "torch.bfloat16"])
def test_a_compiler_seed_of_a_half_precision_problem_passes_on_cpu(
    tmp_path: Path, written: str, cpu_evaluator: LocalEvaluator
) -> None:
    from kernelevolve.variation.compiler_seed import CompilerSeedOperator
    from tests.proposal_context import seed_context

    path = tmp_path / "problems.jsonl"
    path.write_text(
        json.dumps({"level": 2, "problem_id": 1, "name": "1_Half", "code": _problem(written)}) + "\n"
    )
    spec = problem_to_spec(load_problem(path, 2, 1))
    platform = load_platform("cpu")
    (seed,) = CompilerSeedOperator().propose(seed_context(spec, platform))
    settings = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1)
    report = cpu_evaluator.submit(EvalRequest(seed, spec, platform.name, settings)).result()
    assert report.status is Status.OK, report.feedback


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("written", ["torch.float16", "torch.bfloat16"])
def test_half_precision_problems_and_model_suite_specs_pass_on_a_gpu(tmp_path: Path, written: str) -> None:
    """The GPU preflight's dtype check: a KernelBench-form half-precision problem's compiler seed, and the
    model suite's new templates on their bf16/fp16 specs, through the harness on the GPU."""
    from kernelevolve.specs.loading import resolve_spec
    from kernelevolve.types import Candidate
    from kernelevolve.variation.compiler_seed import CompilerSeedOperator
    from kernelevolve.variation.template_library import templates_for
    from tests.gpu import gpu_platform_name, harness_reports
    from tests.proposal_context import seed_context

    platform = load_platform(gpu_platform_name())
    path = tmp_path / "problems.jsonl"
    path.write_text(
        json.dumps({"level": 2, "problem_id": 1, "name": "1_Half", "code": _problem(written)}) + "\n"
    )
    spec = problem_to_spec(load_problem(path, 2, 1))
    seeds = [
        c
        for c in CompilerSeedOperator().propose(seed_context(spec, platform))
        if c.metadata["own_kernels"] or not c.metadata["library_calls"]
    ]
    assert seeds
    (report,) = harness_reports(seeds[:1], spec, platform.name)
    assert report.status is Status.OK, report.feedback
    if written == "torch.float16":
        for name in ("topk_retrieval", "embedding_bag_mean", "jagged_mean"):
            suite_spec = resolve_spec(name, platform)
            candidates = [
                Candidate(t.source, "triton", "template", "seed") for t in templates_for(suite_spec, "triton")
            ]
            for report in harness_reports(candidates, suite_spec, platform.name):
                assert report.status is Status.OK, f"{name}: {report.feedback}"
