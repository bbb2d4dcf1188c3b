"""Fusion-boundary children: a compiler seed re-captured with Inductor cutting kernels elsewhere (CPU)."""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

import pytest

from kernelevolve.platforms import Platform
from kernelevolve.search.fitness import score
from kernelevolve.search.graph import SearchGraph
from kernelevolve.types import Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec, Status
from kernelevolve.variation.compiler.capture import CaptureSettings
from kernelevolve.variation.compiler_seed import CompilerSeedOperator
from kernelevolve.variation.fusion_boundary import PLANS, FusionBoundaryOperator, kernel_fingerprint
from tests.capture_spy import spy_on_captures
from tests.proposal_context import parent_context, seed_context

if TYPE_CHECKING:
    from kernelevolve.eval.local import LocalEvaluator


def _reference(signature: str, body: str, inputs: str) -> str:
    return (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        f"        super().__init__()\n\n    def forward(self, {signature}):\n{body}\n\n\n"
        f"def get_inputs():\n    return [{inputs}]\n\n\ndef get_init_inputs():\n    return []\n"
    )


# An intermediate of six reads feeding reductions over both axes: Inductor writes it out in the first
# reduction and reads it back in the second; recomputed, each reduction reads the six inputs instead.
SHARED_SUM = _reference(
    "a, b, c, d, e, f",
    "        s = a + b * c - d * e + f\n        return s.sum(dim=0), s.sum(dim=1)",
    ", ".join(["torch.randn(16, 32)"] * 6),
)
# A GELU read by two reductions: recomputed (erf twice) by default, written out once when materialised.
GELU_TWO_SUMS = _reference(
    "x, w",
    "        y = torch.nn.functional.gelu(x + w)\n        return y.sum(dim=0), y.sum(dim=1)",
    "torch.randn(16, 32), torch.randn(32)",
)
# Two independent pointwise kernels over 1024 elements each: one kernel under aggressive fusion.
TWO_POINTWISE = _reference(
    "x, y", "        return torch.relu(x), y * y", "torch.randn(1024), torch.randn(32, 32)"
)
# A full sum over 65536 elements: split in two kernels (partial sums, then their sum) by default.
BIG_SUM = _reference("x", "        return x.sum()", "torch.randn(65536)")

# plan -> (reference, kernel kinds before, kernel kinds after)
CHANGES = {
    "aggressive_fusion": (TWO_POINTWISE, ["pointwise", "pointwise"], ["pointwise"]),
    "unsplit_reductions": (BIG_SUM, ["reduction", "persistent_reduction"], ["reduction"]),
    "looped_reductions": (SHARED_SUM, ["persistent_reduction"] * 2, ["reduction"] * 2),
    "recompute_intermediates": (SHARED_SUM, ["persistent_reduction"] * 2, ["persistent_reduction"] * 2),
    "materialize_intermediates": (GELU_TWO_SUMS, ["persistent_reduction"] * 2, ["persistent_reduction"] * 2),
}
SETTINGS = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1)


def _spec(name: str, source: str) -> KernelSpec:
    return KernelSpec(name=name, reference_source=source, atol=1e-3, rtol=1e-4)


def _seed(spec: KernelSpec, platform: Platform) -> Candidate:
    (seed,) = CompilerSeedOperator().propose(seed_context(spec, platform))
    return seed


def _recorded(graph: SearchGraph, candidate: Candidate, status: Status = Status.OK) -> SearchGraph:
    graph.add_candidate(candidate)
    report = EvalReport(candidate_id=candidate.id, status=status)
    graph.record(candidate.id, report, score(report, {}))
    return graph


# The most children any test here wants from one proposal.
_ctx = functools.partial(parent_context, budget_hint=8)


def _kinds(source: str) -> list[str]:
    """Kernel kinds of a candidate, from its launchers' names (Inductor's triton_per_/red_/poi_)."""
    kinds = {"poi": "pointwise", "per": "persistent_reduction", "red": "reduction"}
    return [
        kinds[line.split("triton_")[1][:3]] for line in source.splitlines() if line.startswith("def triton_")
    ]


def test_every_plan_patches_existing_inductor_config_keys() -> None:
    import torch._inductor.config as inductor_config

    known = inductor_config.get_config_copy()
    for plan, patches in PLANS.items():
        assert patches and set(patches) <= set(known), plan
        for key, value in patches.items():
            default = known[key]  # None: a per-device default (the CPU's differs from the GPU's)
            assert value != default and (default is None or type(value) is type(default)), (plan, key)
    with pytest.raises(ValueError, match="unknown fusion plan.*valid: aggressive_fusion"):
        FusionBoundaryOperator(plans=("no_such_plan",))


@pytest.mark.parametrize("plan", sorted(CHANGES))
def test_each_plan_moves_kernel_boundaries_somewhere(cpu_platform: Platform, plan: str) -> None:
    reference, before, after = CHANGES[plan]
    spec = _spec(plan, reference)
    seed = _seed(spec, cpu_platform)
    assert _kinds(seed.source) == before
    operator = FusionBoundaryOperator(plans=(plan,))
    (child,) = operator.propose(_ctx(spec, cpu_platform, _recorded(SearchGraph(), seed), seed))
    assert _kinds(child.source) == after
    assert kernel_fingerprint(child.source) != kernel_fingerprint(seed.source)
    assert child.operator == "fusion_boundary" and child.mode == "fusion" and child.parent_ids == (seed.id,)
    assert child.metadata["fusion_plans"] == [plan] and child.metadata["inductor_config"] == PLANS[plan]
    assert (
        child.metadata["own_kernels"] == seed.metadata["own_kernels"]
        and seed.metadata["inductor_config"] == {}
    )
    compile(child.source, "child", "exec")


def test_children_pass_the_harness_and_their_children_accumulate_plans(
    cpu_platform: Platform, cpu_evaluator: LocalEvaluator
) -> None:
    """Through an evaluation child, as compiler seeds are checked: each boundary move stays correct."""
    changed_by = {  # reference -> the plans that change its kernels
        GELU_TWO_SUMS: {"looped_reductions", "materialize_intermediates"},
        TWO_POINTWISE: {"aggressive_fusion"},
        BIG_SUM: {"unsplit_reductions", "looped_reductions"},
    }

    def evaluated(spec: KernelSpec, graph: SearchGraph, child: Candidate) -> None:
        report = cpu_evaluator.submit(EvalRequest(child, spec, cpu_platform.name, SETTINGS)).result()
        assert report.status is Status.OK, f"{spec.name} {child.metadata['fusion_plans']}: {report.feedback}"
        graph.add_candidate(child)
        graph.record(child.id, report, score(report, {}))

    for number, (reference, plans) in enumerate(changed_by.items()):
        spec = _spec(f"case{number}", reference)
        seed = _seed(spec, cpu_platform)
        graph = _recorded(SearchGraph(), seed)
        children = FusionBoundaryOperator().propose(_ctx(spec, cpu_platform, graph, seed))
        assert {c.metadata["fusion_plans"][0] for c in children} == plans, spec.name
        for child in children:
            evaluated(spec, graph, child)

    # GELU, materialised: looped reductions on top; recompute would undo it, and the rest change nothing.
    spec = _spec("case0", GELU_TWO_SUMS)
    seed = _seed(spec, cpu_platform)
    graph = _recorded(SearchGraph(), seed)
    operator = FusionBoundaryOperator()
    by_plan = {
        c.metadata["fusion_plans"][0]: c for c in operator.propose(_ctx(spec, cpu_platform, graph, seed))
    }
    materialized = by_plan["materialize_intermediates"]
    _recorded(graph, materialized)
    (grandchild,) = operator.propose(_ctx(spec, cpu_platform, graph, materialized))
    assert grandchild.parent_ids == (materialized.id,)
    assert grandchild.metadata["fusion_plans"] == ["materialize_intermediates", "looped_reductions"]
    assert grandchild.metadata["inductor_config"] == {
        **PLANS["materialize_intermediates"],
        **PLANS["looped_reductions"],
    }
    assert _kinds(grandchild.source) == ["reduction"] * 2
    assert grandchild.source not in (by_plan["looped_reductions"].source, materialized.source)
    evaluated(spec, graph, grandchild)
    assert operator.propose(_ctx(spec, cpu_platform, graph, grandchild)) == []


@pytest.fixture
def captures(monkeypatch: pytest.MonkeyPatch) -> list[tuple[CaptureSettings, dict[str, Any]]]:
    """(capture settings, config patches) of every capture made from here on."""
    return spy_on_captures(monkeypatch)


def test_a_plan_is_captured_once_per_problem_and_with_the_parents_settings(
    cpu_platform: Platform, captures: list[tuple[CaptureSettings, dict[str, Any]]]
) -> None:
    spec = _spec("shared_sum", SHARED_SUM)
    seed = _seed(spec, cpu_platform)
    # As if captured in the reference layout (a GPU seed of a convolution): the child is too.
    parent = dataclasses.replace(seed, metadata={**seed.metadata, "layout_optimization": False})
    operator = FusionBoundaryOperator(plans=("recompute_intermediates",))
    del captures[:]
    (child,) = operator.propose(_ctx(spec, cpu_platform, _recorded(SearchGraph(), parent), parent))
    assert captures == [(CaptureSettings(layout_optimization=False), PLANS["recompute_intermediates"])]
    assert child.metadata["layout_optimization"] is False
    again = operator.propose(_ctx(spec, cpu_platform, _recorded(SearchGraph(), parent), parent))
    assert again == [child] and len(captures) == 1  # cached: no second capture
    graph = _recorded(_recorded(SearchGraph(), parent), child)
    assert operator.propose(_ctx(spec, cpu_platform, graph, parent)) == []  # already in the graph


def test_a_plan_that_changes_no_kernel_gives_no_child(cpu_platform: Platform) -> None:
    spec = _spec("shared_sum", SHARED_SUM)
    seed = _seed(spec, cpu_platform)
    graph = _recorded(SearchGraph(), seed)
    unchanged = FusionBoundaryOperator(plans=("aggressive_fusion", "materialize_intermediates"))
    assert unchanged.propose(_ctx(spec, cpu_platform, graph, seed)) == []
    # the budget bounds the children; the plans' order comes from the rng
    (one,) = FusionBoundaryOperator().propose(_ctx(spec, cpu_platform, graph, seed, budget_hint=1))
    assert one.metadata["fusion_plans"][0] in {"looped_reductions", "recompute_intermediates"}


def test_declines_parents_it_cannot_recapture(
    cpu_platform: Platform, captures: list[tuple[CaptureSettings, dict[str, Any]]]
) -> None:
    spec = _spec("shared_sum", SHARED_SUM)
    seed = _seed(spec, cpu_platform)
    del captures[:]
    operator = FusionBoundaryOperator()
    declined = {
        "failed": _recorded(SearchGraph(), seed, Status.INCORRECT),
        "not evaluated": SearchGraph(),
    }
    declined["not evaluated"].add_candidate(seed)
    for why, graph in declined.items():
        assert operator.propose(_ctx(spec, cpu_platform, graph, seed)) == [], why
    others = {  # a rewrite seed does not keep its rewritten reference, which re-capturing would need
        "template": dataclasses.replace(seed, operator="template"),
        "rewrite seed": dataclasses.replace(seed, operator="rewrite_seed"),
        "cute": dataclasses.replace(seed, backend="cute"),
        "library calls only": dataclasses.replace(seed, metadata={**seed.metadata, "kernels": 0}),
    }
    for why, parent in others.items():
        assert operator.propose(_ctx(spec, cpu_platform, _recorded(SearchGraph(), parent), parent)) == [], why
    no_triton = dataclasses.replace(
        _ctx(spec, cpu_platform, _recorded(SearchGraph(), seed), seed), backends=("cute",)
    )
    assert operator.propose(no_triton) == []
    assert captures == []


GEMM_SOFTMAX = _reference(
    "x",
    "        return torch.softmax(self.linear(x), dim=1)",
    "torch.randn(8, 32)",
).replace("super().__init__()", "super().__init__()\n        self.linear = nn.Linear(32, 16)")


def test_own_kernels_and_tensor_core_precision_are_kept(cpu_platform: Platform) -> None:
    from kernelevolve.variation.compiler_seed import with_tensor_cores
    from kernelevolve.variation.tunables import find_tunables

    spec = _spec("gemm_softmax", GEMM_SOFTMAX)
    own = next(
        c
        for c in CompilerSeedOperator().propose(seed_context(spec, cpu_platform))
        if c.metadata["own_kernels"]
    )
    twin_source = with_tensor_cores(own.source)
    assert twin_source is not None
    twin = Candidate(
        twin_source, "triton", "compiler_seed", metadata={**own.metadata, "fp32_precision": "tf32x3"}
    )
    operator = FusionBoundaryOperator(plans=("looped_reductions",))
    (child,) = operator.propose(_ctx(spec, cpu_platform, _recorded(SearchGraph(), twin), twin))
    assert child.metadata["own_kernels"] and child.metadata["library_calls"] == []
    assert "_matmul(" in child.source and "torch.addmm" not in child.source
    assert child.metadata["fp32_precision"] == "tf32x3"
    assert {t.name: t.value for t in find_tunables(child.source)}["MM_FP32_PRECISION"] == "tf32x3"
    assert "reduction" in _kinds(child.source) and "persistent_reduction" in _kinds(twin.source)


def test_fingerprint_ignores_inductors_numbering() -> None:
    kernel = (
        "import triton\n\n@triton.jit\ndef k(in_ptr0, out_ptr0, X: tl.constexpr):\n"
        "    tmp0 = tl.load(in_ptr0 + X)\n    tmp1 = tmp0 * tmp0\n    tl.store(out_ptr0 + X, tmp1)\n"
    )
    renumbered = kernel.replace("out_ptr0", "in_out_ptr0").replace("tmp1", "tmp7").replace("def k", "def k2")
    assert kernel_fingerprint(kernel) == kernel_fingerprint(renumbered)
    assert kernel_fingerprint(kernel) != kernel_fingerprint(kernel.replace("tmp0 * tmp0", "tmp0 + tmp0"))
    assert kernel_fingerprint("def (") is None
