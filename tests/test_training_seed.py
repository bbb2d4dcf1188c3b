"""compiler_seed on a training spec: torch.compile's forward and backward (AOTAutograd's joint graph,
partitioned as Inductor does), rendered as an autograd.Function and checked by the harness (CPU)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kernelevolve.backends.triton import BACKEND
from kernelevolve.eval import harness
from kernelevolve.paths import SPEC_DIR
from kernelevolve.platforms import Platform
from kernelevolve.specs.loading import load_spec_file
from kernelevolve.types import EvalRequest, EvalSettings, Status
from kernelevolve.variation.compiler.joint_capture import capture_joint
from kernelevolve.variation.compiler_seed import CompilerSeedOperator
from kernelevolve.variation.tunables import find_tunables
from tests.proposal_context import seed_context


@pytest.fixture(scope="module", autouse=True)
def _interpreter() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        BACKEND.prepare_process("cpu")
        yield


def test_joint_capture_pairs_the_forward_with_its_backward(cpu_platform: Platform) -> None:
    spec = load_spec_file(SPEC_DIR / "train_rmsnorm.yaml", cpu_platform)
    joint = capture_joint(spec, spec.shapes[0], "cpu")
    assert joint.outputs == 1 and joint.saved >= 1 and joint.gradients == len(joint.graph_inputs) == 2
    assert "def call(" in joint.forward_code and "def call(" in joint.backward_code
    assert "tangents_1" in joint.backward_code


@pytest.mark.parametrize(("name", "strict"), [("train_rmsnorm", True), ("train_softmax_ce", True)])
def test_training_seed_passes_forward_and_backward_checks(
    cpu_platform: Platform, name: str, strict: bool
) -> None:
    spec = load_spec_file(SPEC_DIR / f"{name}.yaml", cpu_platform)
    seeds = CompilerSeedOperator(strict=strict).propose(seed_context(spec, cpu_platform))
    assert len(seeds) == 1 and seeds[0].metadata["source"] == "inductor_joint"
    source = seeds[0].source
    assert "torch.autograd.Function" in source and "_backward_s0" in source
    names = {t.name for t in find_tunables(source) if t.declared}
    assert any(n.startswith("F0_K") for n in names) and any(n.startswith("B0_K") for n in names)  # per pass
    settings = EvalSettings(
        correctness_trials=2, timing_trials=2, warmup_trials=1, measure_compile_baseline=False
    )
    report = harness.evaluate(EvalRequest(seeds[0], spec, "cpu", settings), cpu_platform)
    assert report.status is Status.OK, report.feedback
    assert set(report.forward_latency) == set(report.latency)
