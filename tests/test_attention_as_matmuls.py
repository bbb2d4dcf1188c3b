"""Attention captured as matmuls: PyTorch's math SDPA backend forced while Inductor's program is traced, so
compiler seeds get bmm calls (the library's TF32+BF16 split, or our GEMM) and a softmax kernel in place of
the fused attention op, whose head size our attention kernel bounds (KernelBench L1/97: 1024)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pytest

from kernelevolve.eval.local import LocalEvaluator
from kernelevolve.eval.static.checks import check_source
from kernelevolve.platforms import Platform, load_platform
from kernelevolve.search.graph import SearchGraph
from kernelevolve.specs.loading import resolve_spec
from kernelevolve.types import Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec, Status
from kernelevolve.variation.compiler.capture import INDUCTORS_OWN, CaptureSettings, capture
from kernelevolve.variation.compiler.own_attention import ATTENTION_SOURCE, MAX_HEAD_DIM
from kernelevolve.variation.compiler.program import parse
from kernelevolve.variation.compiler_seed import CompilerSeedOperator, capture_settings
from kernelevolve.variation.tunables import find_tunables
from tests.capture_spy import spy_on_captures
from tests.proposal_context import seed_context

if TYPE_CHECKING:
    from kernelevolve.eval.local import LocalEvaluator

AS_MATMULS = CaptureSettings(attention_as_matmuls=True)
FUSED_OP = "_scaled_dot_product_"  # every fused attention op's name starts so

# KernelBench L1/97 at a CPU size: (batch, heads, sequence, head size)
SDPA_REFERENCE = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, Q, K, V):
        return F.scaled_dot_product_attention(Q, K, V)


def get_inputs():
    return [torch.randn(2, 2, 16, HEAD_DIM) for _ in range(3)]


def get_init_inputs():
    return []
"""


def _sdpa(head_dim: int = 32) -> KernelSpec:
    source = SDPA_REFERENCE.replace("HEAD_DIM", str(head_dim))
    return KernelSpec(name=f"sdpa_{head_dim}", reference_source=source, atol=1e-4, rtol=1e-4)


@pytest.fixture
def captures(monkeypatch: pytest.MonkeyPatch) -> list[tuple[CaptureSettings, dict[str, Any]]]:
    """(settings, config patches) of every capture made from here on; each is made for the CPU, whatever
    the device asked for (a GPU platform's seeds are rendered for it all the same)."""
    return spy_on_captures(monkeypatch, device="cpu")


def _gpu() -> Platform:
    return dataclasses.replace(load_platform("cpu"), device="cuda")


def _kinds(seeds: list[Candidate]) -> list[tuple[bool, object, bool]]:
    """(own kernels, fp32 precision, attention as matmuls) of each seed, in order."""
    return [
        (
            c.metadata["own_kernels"],
            c.metadata.get("fp32_precision"),
            bool(c.metadata.get("attention_as_matmuls")),
        )
        for c in seeds
    ]


def test_the_math_backend_captures_attention_as_bmm_calls_and_a_softmax() -> None:
    spec = _sdpa()
    fused = capture(spec, spec.shapes[0], "cpu")
    assert FUSED_OP in fused.code and fused.attention_head_dim == 32
    as_matmuls = capture(spec, spec.shapes[0], "cpu", AS_MATMULS)
    assert FUSED_OP not in as_matmuls.code and as_matmuls.attention_head_dim == 0
    # q @ k^T and softmax(scores) @ v, each one library call; q and k scaled, and the softmax, in kernels
    assert as_matmuls.code.count("extern_kernels.bmm(") == 2
    program = parse(as_matmuls.code)
    assert program.library_calls == ("torch.bmm",)
    assert any("softmax" in k.name for k in program.kernels)


def test_the_operator_captures_attention_as_matmuls_only_where_there_is_fused_attention(
    captures: list[tuple[CaptureSettings, dict[str, Any]]],
) -> None:
    platform = load_platform("cpu")
    softmax = CompilerSeedOperator().propose(seed_context(resolve_spec("softmax", platform), platform))
    assert {settings for settings, _ in captures} == {
        INDUCTORS_OWN
    } and softmax  # one capture per shape, as Inductor does
    assert not any("attention_as_matmuls" in c.metadata for c in softmax)
    del captures[:]
    seeds = CompilerSeedOperator().propose(seed_context(_sdpa(), platform))
    assert [settings for settings, _ in captures] == [INDUCTORS_OWN, AS_MATMULS]
    # the fused op (Inductor writes no kernel for it): our attention kernel only; as matmuls, the library's
    # bmm (permissive) and our GEMM (strict), after it
    assert _kinds(seeds) == [(True, None, False), (False, None, True), (True, None, True)]
    fused, library, own = seeds
    assert "_own_cpu_flash_attention(" in fused.source
    assert "torch.bmm(" in library.source and FUSED_OP not in library.source
    assert "_matmul(" in own.source and "torch.bmm" not in own.source and FUSED_OP not in own.source
    assert library.metadata["library_calls"] == ["torch.bmm"] and own.metadata["library_calls"] == []
    for seed in (library, own):  # what re-capturing them (fusion_boundary) asks for
        assert capture_settings(seed.metadata) == (AS_MATMULS, {})
    assert capture_settings(fused.metadata) == (INDUCTORS_OWN, {})


def test_attention_as_matmuls_seeds_match_the_reference_on_cpu(cpu_evaluator: LocalEvaluator) -> None:
    """Through the harness, at the spec's 1e-4: the library's bmm and our GEMM (which passes strict mode's
    static checks) in the Triton interpreter."""
    spec = _sdpa()
    platform = load_platform("cpu")
    seeds = [
        c
        for c in CompilerSeedOperator().propose(seed_context(spec, platform))
        if c.metadata.get("attention_as_matmuls")
    ]
    library, own = sorted(seeds, key=lambda c: c.metadata["own_kernels"])
    assert not check_source(own.source, "triton", True)
    settings = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1, strict=False)
    for seed in (library, own):
        report = cpu_evaluator.submit(EvalRequest(seed, spec, platform.name, settings)).result()
        assert report.status is Status.OK, report.feedback


def test_head_sizes_beyond_our_attention_kernel_put_attention_as_matmuls_first(
    captures: list[tuple[CaptureSettings, dict[str, Any]]],
) -> None:
    """KernelBench L1/97's case (head size 1024): our attention kernel refuses it, so the fused op gets no
    own seed, and on a GPU the first seed is the bmm calls in one TF32 and one BF16 pass each."""
    assert f"max(head_dim, value_dim) > {MAX_HEAD_DIM}:" in ATTENTION_SOURCE  # the kernel's own bound
    wide = _sdpa(MAX_HEAD_DIM + 64)
    permissive = CompilerSeedOperator().propose(seed_context(wide, _gpu()))
    assert _kinds(permissive) == [
        (False, "tf32_bf16", True),
        (False, None, True),
        (True, "bf16x3", True),
        (True, "tf32x3", True),
        (True, None, True),
    ]
    first = permissive[0]
    assert "_library_matmul(" in first.source and FUSED_OP not in first.source
    assert {t.name: t.value for t in find_tunables(first.source)}["LIBRARY_MM_FP32_PRECISION"] == "tf32_bf16"
    strict = CompilerSeedOperator(strict=True).propose(seed_context(wide, _gpu()))
    assert _kinds(strict) == _kinds(permissive)[2:]
    # within our kernel's head sizes the fused op's seeds lead, attention as matmuls after them
    narrow = CompilerSeedOperator().propose(seed_context(_sdpa(MAX_HEAD_DIM), _gpu()))
    assert _kinds(narrow) == [(True, None, False), *_kinds(permissive)]


def test_a_fusion_child_of_an_attention_as_matmuls_seed_is_captured_so_too(
    captures: list[tuple[CaptureSettings, dict[str, Any]]],
) -> None:
    from kernelevolve.search.fitness import score
    from kernelevolve.variation.fusion_boundary import FusionBoundaryOperator
    from tests.proposal_context import parent_context

    spec, platform = _sdpa(), load_platform("cpu")
    seed = next(
        c
        for c in CompilerSeedOperator().propose(seed_context(spec, platform))
        if c.metadata.get("attention_as_matmuls") and not c.metadata["own_kernels"]
    )
    graph = SearchGraph()
    graph.add_candidate(seed)
    report = EvalReport(candidate_id=seed.id, status=Status.OK)
    graph.record(seed.id, report, score(report, {}))
    del captures[:]
    operator = FusionBoundaryOperator(plans=("looped_reductions",))  # the softmax's rows in a loop
    (child,) = operator.propose(parent_context(spec, platform, graph, seed))
    assert [settings for settings, _ in captures] == [AS_MATMULS]
    assert child.metadata["attention_as_matmuls"] is True and FUSED_OP not in child.source
    assert capture_settings(child.metadata) == (AS_MATMULS, {"triton.persistent_reductions": False})
