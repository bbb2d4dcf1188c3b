"""Where neither Inductor nor our operators have a kernel for part of a program (a linear solve, digamma),
the compiler seed keeps that part's library call and runs Inductor's Triton for the rest: correct in
permissive mode, rejected in strict mode, so strict results count such a spec library_only."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from kernelevolve.eval.own_kernels import kernel_use
from kernelevolve.platforms import load_platform
from kernelevolve.types import EvalRequest, EvalSettings, KernelSpec, ShapeCase, Status
from kernelevolve.variation.compiler_seed import CompilerSeedOperator
from tests.proposal_context import seed_context

if TYPE_CHECKING:
    from kernelevolve.eval.local import LocalEvaluator

pytest.importorskip("torch")

SOLVE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.relu(torch.linalg.solve(A, B)) * 2 + torch.digamma(B.abs() + 1)


n = 8


def get_inputs():
    return [torch.randn(n, n) + n * torch.eye(n), torch.randn(n, 3)]


def get_init_inputs():
    return []
"""


def test_a_library_part_is_kept_and_the_rest_is_ours(cpu_evaluator: LocalEvaluator) -> None:
    platform = load_platform("cpu")
    spec = KernelSpec(
        "solve_then_relu", SOLVE, shapes=(ShapeCase("default"),), input_distributions=("normal",)
    )
    (seed,) = CompilerSeedOperator(strict=False).propose(seed_context(spec, platform))
    calls = seed.metadata["library_calls"]
    assert any("linalg_solve" in c for c in calls) and seed.metadata["kernels"] >= 1
    assert CompilerSeedOperator(strict=True).propose(seed_context(spec, platform)) == []
    use = kernel_use(seed)
    assert use.uses_library and not use.own_kernels_only  # what strict results call library_only
    permissive = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1, strict=False)
    report = cpu_evaluator.submit(EvalRequest(seed, spec, platform.name, permissive)).result()
    assert report.status is Status.OK, report.feedback
