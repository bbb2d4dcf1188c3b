"""Work-reducing rewrites: each rule is exact on random inputs and removes the work it claims to, the
rules leave alone what they must not touch, and the rewrite seed passes the harness on the CPU."""

from __future__ import annotations

import logging

import pytest
import torch

from kernelevolve.eval import harness
from kernelevolve.eval.static.checks import check_source
from kernelevolve.platforms import Platform
from kernelevolve.specs.reference_module import load_reference_module
from kernelevolve.types import EvalRequest, EvalSettings, KernelSpec, ShapeCase, Status
from kernelevolve.variation.rewrite import RULES, rewrite_reference
from kernelevolve.variation.rewrite.nodes import op_name
from kernelevolve.variation.rewrite.trace import trace_reference
from kernelevolve.variation.rewrite_seed import RewriteSeedOperator
from tests.proposal_context import seed_context

TEMPLATE = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
INIT

    def forward(self, x):
FORWARD


batch_size = 8
in_features = 12
out_features = 10


def get_inputs():
    return [INPUTS]


def get_init_inputs():
    return [in_features, out_features]
"""


def reference(init: str, forward: str, inputs: str = "torch.rand(batch_size, in_features)") -> str:
    indent = lambda text, n: "\n".join(" " * n + line for line in text.strip().splitlines())  # noqa: E731
    return (
        TEMPLATE.replace("INIT", indent(init, 8))
        .replace("FORWARD", indent(forward, 8))
        .replace("INPUTS", inputs)
    )


def outputs(source: str, seed: int = 0) -> torch.Tensor:
    """The model's output on seeded inputs, its parameters (batch-norm statistics too) seeded."""
    module = load_reference_module(source)
    torch.manual_seed(seed)
    model = module.Model(*module.get_init_inputs()).eval()
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            if buffer.is_floating_point():
                buffer.copy_(torch.rand_like(buffer) + 0.5 if "var" in name else torch.randn_like(buffer))
        torch.manual_seed(seed + 1)
        return model(*module.get_inputs())


def assert_exact(source: str, rules: tuple[str, ...]) -> str:
    """Rewrite `source` in eval mode (batch norms fold with their running statistics); the fired rules
    are `rules` and the result equals the reference's."""
    rewritten = rewrite_reference(source, mode="eval")
    assert rewritten.rules == rules, rewritten
    expected, got = outputs(source), outputs(rewritten.source)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    return rewritten.source


def full_gemms(source: str) -> list[str]:
    """GEMMs in the graph that make a matrix (of more than one column), not a vector."""
    gm = trace_reference(source).graph_module
    found = []
    for node in gm.graph.nodes:
        if node.op == "call_module" and isinstance(gm.get_submodule(node.target), torch.nn.Linear):
            found.append(node.name)
        out = node.meta["tensor_meta"].shape if "tensor_meta" in node.meta else ()
        if op_name(node) in ("matmul", "addmm", "linear") and len(out) >= 2 and out[-1] != 1:
            found.append(node.name)
    return found


LINEAR = "self.gemm = nn.Linear(in_features, out_features)"
FOLDS = {  # name -> (init, forward): a sum or mean over the GEMM's output features
    "divide_sum_scale": (
        "self.weight = nn.Parameter(torch.randn(out_features, in_features))",
        "x = torch.matmul(x, self.weight.T)\nx = x / 2\nx = torch.sum(x, dim=1, keepdim=True)\nreturn x * 1.5",
    ),
    "subtract_mean": (
        f"{LINEAR}\nself.subtract = nn.Parameter(torch.randn(out_features))",
        "return (self.gemm(x) - self.subtract).mean(dim=-1)",
    ),
    "row_scale_then_term": (
        LINEAR,
        "y = self.gemm(x) * x[:, :1]\nreturn (y - x[:, 1:2] * 3.0).sum(1, keepdim=True) / 4",
    ),
    "no_bias_feature_scale_shift": (
        "self.gemm = nn.Linear(in_features, out_features, bias=False)\n"
        "self.scale = nn.Parameter(torch.randn(out_features))",
        "return ((self.gemm(x) * self.scale + 1.0) * 2).mean(1)",
    ),
    "feature_scale_batchnorm": (
        f"{LINEAR}\nself.scale = nn.Parameter(torch.randn(out_features))\nself.bn = nn.BatchNorm1d(out_features)",
        "return self.bn(self.gemm(x) * self.scale).sum(1, keepdim=True) + 1.0",
    ),
    "functional_all_dims": (
        f"{LINEAR}\nself.drop = nn.Dropout(0.3)",
        "return self.drop(F.linear(x, self.gemm.weight, self.gemm.bias) + 0.5).sum()",
    ),
    "rsub_neg_row_scale": (
        LINEAR,
        "y = 2.0 - self.gemm(x)\nreturn torch.mean(-y * x[:, :1], dim=1, keepdim=True)",
    ),
    "addmm": (
        "self.w = nn.Parameter(torch.randn(in_features, out_features))\nself.b = nn.Parameter(torch.randn(out_features))",
        "return torch.addmm(self.b, x, self.w).sum(-1)",
    ),
    "batched_matmul": (
        "self.w = nn.Parameter(torch.randn(3, in_features, out_features))",
        "return torch.bmm(x, self.w).mean(2, keepdim=True)",
    ),
}


@pytest.mark.parametrize("name", sorted(FOLDS))
def test_a_reduction_over_gemm_features_folds_into_a_matrix_vector_product(name: str) -> None:
    init, forward = FOLDS[name]
    inputs = "torch.rand(3, batch_size, in_features)" if name == "batched_matmul" else None
    source = reference(init, forward, *([inputs] if inputs else []))
    assert full_gemms(source)
    rewritten = assert_exact(source, ("linear_fold",))
    assert not full_gemms(rewritten)


def test_reductions_over_size_one_dimensions_go() -> None:
    """KernelBench 2/18: Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp."""
    forward = (
        "x = torch.sum(self.gemm(x), dim=1, keepdim=True)\nx = torch.max(x, dim=1, keepdim=True)[0]\n"
        "x = torch.mean(x, dim=1, keepdim=True)\nx = torch.logsumexp(x, dim=1, keepdim=True)\n"
        "return torch.amax(x, dim=1)"
    )
    rewritten = assert_exact(reference(LINEAR, forward), ("linear_fold", "singleton_reduction"))
    for op in ("max", "logsumexp", "amax", "mean"):
        assert f"torch.{op}(" not in rewritten


def test_a_difference_with_itself_is_zero() -> None:
    """KernelBench 2/80: the max over features minus its mean over a size-1 dimension: no GEMM left."""
    forward = (
        "x = self.gemm(x)\nx = torch.max(x, dim=1, keepdim=True).values\n"
        "x = x - x.mean(dim=1, keepdim=True)\nreturn F.gelu(x)"
    )
    rewritten = assert_exact(reference(LINEAR, forward), ("singleton_reduction", "self_difference"))
    forward = rewritten.split("def forward")[1]
    assert "self.gemm" not in forward and ".new_zeros(" in forward


CONV = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = MODULE
        self.bn = nn.BatchNormNd(5)
        self.pool = nn.AdaptiveAvgPoolNd(1)

    def forward(self, x):
        y = self.bn(self.conv(x) * 0.5) + 1.0
        return REDUCE


def get_inputs():
    return [torch.rand(SHAPE)]


def get_init_inputs():
    return []
"""
CONVS = {  # name -> (module, input shape): strides, padding, dilation, output padding, 1-3 dims
    "conv2d": ("nn.Conv2d(3, 5, 3, stride=2, padding=1, dilation=(1, 2))", "2, 3, 9, 11"),
    "conv2d_same": ("nn.Conv2d(3, 5, 4, padding='same', bias=False)", "2, 3, 7, 6"),
    "conv1d": ("nn.Conv1d(3, 5, 4, stride=3, padding=2)", "2, 3, 13"),
    "conv3d": ("nn.Conv3d(3, 5, (2, 3, 3), stride=(1, 2, 1), padding=1)", "1, 3, 4, 6, 5"),
    "conv_transpose2d": ("nn.ConvTranspose2d(3, 5, 3, stride=2, padding=1, output_padding=1)", "2, 3, 5, 6"),
    "conv_transpose1d": ("nn.ConvTranspose1d(3, 5, 5, stride=3, padding=4, dilation=2)", "2, 3, 7"),
    "conv_transpose3d": ("nn.ConvTranspose3d(3, 5, 3, stride=(2, 1, 1))", "1, 3, 3, 4, 4"),
}


def conv_reference(name: str, reduce: str = "") -> str:
    """The convolution, a scale, batch norm and a shift, then `reduce` of `y` (default: the global
    spatial mean, kept dimensions)."""
    module, shape = CONVS[name]
    n = shape.count(",") - 1  # spatial dimensions: the input has batch and channels first
    spatial = ", ".join(str(d) for d in range(2, n + 2))
    reduce = reduce or f"torch.mean(y, dim=({spatial},), keepdim=True)"
    replacements = {"MODULE": module, "SHAPE": shape, "Nd(": f"{n}d(", "REDUCE": reduce}
    source = CONV
    for old, new in replacements.items():
        source = source.replace(old, new)
    return source


@pytest.mark.parametrize("name", sorted(CONVS))
def test_a_global_spatial_mean_after_a_convolution_needs_no_convolution(name: str) -> None:
    rewritten = assert_exact(conv_reference(name), ("conv_fold",))
    assert "self.conv(" not in rewritten


@pytest.mark.parametrize("reduce", ["self.pool(y)", "torch.sum(y, dim=[1, 2, 3])", "y.sum()"])
def test_adaptive_average_pooling_and_sums_beyond_the_positions_fold_too(reduce: str) -> None:
    rewritten = assert_exact(conv_reference("conv_transpose2d", reduce), ("conv_fold",))
    assert "self.conv(" not in rewritten


NOT_FOLDED = {  # name -> (init, forward): each must keep its GEMM
    "relu_between": (LINEAR, "return torch.relu(self.gemm(x)).sum(1)"),
    "sum_over_batch": (LINEAR, "return (self.gemm(x) * 2).sum(0)"),
    "output_used_twice": (LINEAR, "y = self.gemm(x)\nreturn y + y.sum(1, keepdim=True)"),
    "square": (LINEAR, "y = self.gemm(x)\nreturn (y * y).sum(1)"),
    "per_element_scale": (LINEAR, "return (self.gemm(x) * torch.ones(batch_size, out_features)).sum(1)"),
    "max_over_features": (LINEAR, "return torch.max(self.gemm(x), dim=1)[0]"),
    "max_indices_used": (
        LINEAR,
        "y = self.gemm(x).sum(1, keepdim=True)\nreturn torch.max(y, 1).indices * 1.0",
    ),
}


@pytest.mark.parametrize("name", sorted(NOT_FOLDED))
def test_what_is_not_linear_up_to_the_reduction_keeps_its_gemm(name: str) -> None:
    init, forward = NOT_FOLDED[name]
    source = reference(init, forward)
    rewritten = rewrite_reference(source, rules=("linear_fold", "singleton_reduction", "self_difference"))
    if name == "max_indices_used":  # the sum folds; the max over size 1 stays, its indices are read
        assert rewritten.rules == ("linear_fold",)
        return
    assert not rewritten.fired and rewritten.reason == "no rewrite rule applies"


def test_partial_spatial_and_grouped_convolutions_are_left_alone() -> None:
    partial = conv_reference("conv2d", "torch.mean(y, dim=2, keepdim=True)")
    assert not rewrite_reference(partial).fired
    grouped = conv_reference("conv2d").replace("nn.Conv2d(3, 5, 3,", "nn.Conv2d(4, 5, 3, groups=2,")
    assert not rewrite_reference(grouped.replace("torch.rand(2, 3,", "torch.rand(2, 4,")).fired
    relu = conv_reference("conv2d", "torch.relu(y).mean(dim=(2, 3))")
    assert not rewrite_reference(relu).fired


def test_only_forward_changes_and_a_bad_reference_gives_a_reason() -> None:
    init, forward = FOLDS["subtract_mean"]
    source = reference(init, forward)
    rewritten = rewrite_reference(source).source
    before, after = source.split("    def forward")[0], rewritten.split("    def forward")[0]
    assert before == after and source.split("batch_size = 8")[1] == rewritten.split("batch_size = 8")[1]
    broken = rewrite_reference(source.replace("self.gemm(x)", "self.gemm(x.item())"))
    assert not broken.fired and "shape propagation failed" in broken.reason
    with pytest.raises(ValueError, match="linear_fold"):
        rewrite_reference(source, rules=("bogus",))
    with pytest.raises(ValueError, match="bogus"):
        RewriteSeedOperator(rules=["bogus"])
    assert set(RULES) == {"linear_fold", "conv_fold", "singleton_reduction", "self_difference"}


# --- the operator, through the real harness on the CPU ------------------------------------------


def _evaluate(candidate, spec: KernelSpec, platform: Platform, settings: EvalSettings) -> None:  # type: ignore[no-untyped-def]
    report = harness.evaluate(EvalRequest(candidate, spec, platform.name, settings), platform)
    assert report.status is Status.OK, report.feedback
    assert set(report.latency) == {s.name for s in spec.shapes}


def test_rewrite_seeds_pass_the_harness(cpu_platform: Platform, fast_settings: EvalSettings) -> None:
    """KernelBench 2/14 and 2/51 in small, at two shapes: Triton only, strict-clean, correct."""
    divide_sum = reference(*FOLDS["divide_sum_scale"])
    residual = reference(
        f"{LINEAR}\nself.subtract = nn.Parameter(torch.randn(out_features))",
        "original = x.clone().detach()\nx = torch.mean(self.gemm(x) - self.subtract, dim=1, keepdim=True)\n"
        "x = torch.logsumexp(x, dim=1, keepdim=True)\nreturn F.gelu(x) + original",
    )
    shapes = (ShapeCase("small", {}), ShapeCase("wide", {"batch_size": 5, "out_features": 33}))
    for name, source in (("divide_sum", divide_sum), ("residual", residual)):
        spec = KernelSpec(name=name, reference_source=source, shapes=shapes)
        operator = RewriteSeedOperator()
        (seed,) = operator.propose(seed_context(spec, cpu_platform))
        assert seed.operator == "rewrite_seed" and seed.metadata["rewrites"][0] == "linear_fold"
        assert seed.metadata["library_calls"] == [] and not check_source(seed.source, "triton", True)
        _evaluate(seed, spec, cpu_platform, fast_settings)


def test_a_gemm_left_over_gives_both_compiler_seed_variants(
    cpu_platform: Platform, fast_settings: EvalSettings
) -> None:
    """One GEMM folds, another stays: a seed keeping its library call and one with our own GEMM."""
    source = reference(
        f"{LINEAR}\nself.other = nn.Linear(in_features, out_features)",
        "return self.other(x) + self.gemm(x).sum(1, keepdim=True)",
    )
    spec = KernelSpec(name="left_over", reference_source=source)
    by_variant = {
        c.metadata["own_kernels"]: c for c in RewriteSeedOperator().propose(seed_context(spec, cpu_platform))
    }
    assert by_variant[False].metadata["library_calls"] == ["torch.addmm"]
    assert by_variant[True].metadata["rewrites"] == ["linear_fold"]
    assert not check_source(by_variant[True].source, "triton", True)
    _evaluate(by_variant[True], spec, cpu_platform, fast_settings)


def test_a_seed_without_the_gemm_passes_the_harness(
    cpu_platform: Platform, fast_settings: EvalSettings
) -> None:
    """KernelBench 2/80 in small: what is left after `a - a` is one pointwise kernel."""
    forward = (
        "x = self.gemm(x)\nx = torch.max(x, dim=1, keepdim=True).values\n"
        "x = x - x.mean(dim=1, keepdim=True)\nreturn F.gelu(x)"
    )
    spec = KernelSpec(name="max_subtract", reference_source=reference(LINEAR, forward))
    assert RewriteSeedOperator().propose(seed_context(spec, cpu_platform)) == []  # `a - a` is opt-in
    (seed,) = RewriteSeedOperator(rules=RULES).propose(seed_context(spec, cpu_platform))
    assert (
        seed.metadata["rewrites"] == ["singleton_reduction", "self_difference"]
        and seed.metadata["kernels"] == 1
    )
    _evaluate(seed, spec, cpu_platform, fast_settings)
    only_folds = RewriteSeedOperator(rules=["linear_fold", "conv_fold"])
    assert only_folds.propose(seed_context(spec, cpu_platform)) == []


def test_a_convolution_fold_passes_the_harness(cpu_platform: Platform, fast_settings: EvalSettings) -> None:
    spec = KernelSpec(name="conv_mean", reference_source=conv_reference("conv_transpose2d"), mode="eval")
    (seed,) = RewriteSeedOperator().propose(seed_context(spec, cpu_platform))
    assert seed.metadata["rewrites"] == ["conv_fold"] and "torch.convolution" not in seed.source
    _evaluate(seed, spec, cpu_platform, fast_settings)


def test_a_batch_norm_in_training_mode_is_never_folded() -> None:
    """As built (training mode) a batch norm normalises with the batch's statistics: no fold is exact."""
    assert "conv_fold" not in rewrite_reference(conv_reference("conv2d")).rules
    assert "conv_fold" in rewrite_reference(conv_reference("conv2d"), mode="eval").rules


def test_no_rule_no_seed(cpu_platform: Platform, caplog: pytest.LogCaptureFixture) -> None:
    spec = KernelSpec(name="relu_sum", reference_source=reference(*NOT_FOLDED["relu_between"]))
    with caplog.at_level(logging.INFO, logger="kernelevolve.variation.rewrite_seed"):
        assert RewriteSeedOperator().propose(seed_context(spec, cpu_platform)) == []
    assert "no rewrite rule applies" in caplog.text
