"""Our kernels in place of the fused transformer encoder layer (compiler seeds, strict mode).

The helper runs under Triton's interpreter on CPU against the op itself, then a batch-first encoder's strict
seed goes through the harness.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest
import torch
from torch import nn

from kernelevolve.eval.static.checks import check_source
from kernelevolve.variation.compiler.own_attention import ATTENTION_SOURCE, ATTENTION_TUNABLES
from kernelevolve.variation.compiler.own_encoder import ENCODER_SOURCE
from kernelevolve.variation.compiler.own_gemm import GEMM_SOURCE, GEMM_TUNABLES
from kernelevolve.variation.tunables import apply_values
from tests.gpu import gpu_platform_name, harness_reports, needs_cuda
from tests.kernelbench_data import KERNELBENCH, needs_kernelbench
from tests.source_module import load_source

if TYPE_CHECKING:
    from kernelevolve.eval.local import LocalEvaluator

ENCODER_OP = torch.ops.aten._transformer_encoder_layer_fwd.default


def _encoder_module(tmp_path: Path) -> ModuleType:
    header = "import torch\nimport triton\nimport triton.language as tl\n"
    source = "\n".join(
        [header, *GEMM_TUNABLES, GEMM_SOURCE, *ATTENTION_TUNABLES, ATTENTION_SOURCE, ENCODER_SOURCE]
    )
    small = {"ATTN_BLOCK_M": 16, "ATTN_BLOCK_N": 16, "ATTN_FP32_PRECISION": "ieee", "MM_BLOCK_M": 32}
    return load_source(apply_values(source, small), tmp_path, "own_encoder_candidate")


def _op_arguments(layer: nn.TransformerEncoderLayer, src: torch.Tensor) -> list[object]:
    """The fast path's arguments, as nn.TransformerEncoderLayer.forward passes them."""
    attention = layer.self_attn
    return [
        src, attention.embed_dim, attention.num_heads, attention.in_proj_weight, attention.in_proj_bias,
        attention.out_proj.weight, attention.out_proj.bias, layer.activation_relu_or_gelu == 2, layer.norm_first,
        layer.norm1.eps, layer.norm1.weight, layer.norm1.bias, layer.norm2.weight, layer.norm2.bias,
        layer.linear1.weight, layer.linear1.bias, layer.linear2.weight, layer.linear2.bias,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("norm_first", "activation", "bias"),
    [(False, "relu", True), (True, "gelu", True), (False, "gelu", False)],
)
def test_the_helper_matches_the_op(
    interpreter: None, tmp_path: Path, norm_first: bool, activation: str, bias: bool
) -> None:
    """Sequences no attention block divides (21 tokens), heads of 8, both norm placements, both
    activations, layers without biases; against the module's forward and PyTorch's fast-path op."""
    module = _encoder_module(tmp_path)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=48, dropout=0.0, activation=activation,
        batch_first=True, norm_first=norm_first, bias=bias,
    ).eval()  # fmt: skip
    src = torch.randn(3, 21, 32)
    arguments = _op_arguments(layer, src)
    with torch.no_grad():
        got = module._own_transformer_encoder_layer(*arguments)
        torch.testing.assert_close(got, layer(src), atol=1e-5, rtol=1e-5)  # the module's own forward
        if bias:  # the op itself takes no missing bias (the module's forward then takes its slow path)
            torch.testing.assert_close(got, ENCODER_OP(*arguments), atol=1e-5, rtol=1e-5)
    with pytest.raises(NotImplementedError, match="mask"):
        module._own_transformer_encoder_layer(*arguments, torch.zeros(21, 21), 0)
    empty = torch.empty(0, 21, 32)
    assert module._own_transformer_encoder_layer(empty, *arguments[1:]).shape == empty.shape


# KernelBench's L3/32 in small: batch-first encoder layers (PyTorch's fast path, one fused op each) with
# work around them, so Inductor writes Triton kernels as well as the op's fallback call
BATCH_FIRST_ENCODER = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(d_model=dim, nhead=heads, dim_feedforward=2 * dim, dropout=0.0, batch_first=True)
            for _ in range(2)
        ])

    def forward(self, x):
        x = torch.relu(x) * 2.0
        for layer in self.layers:
            x = layer(x)
        return x[:, 0] * 0.5


def get_inputs():
    return [torch.randn(3, 5, 32)]


def get_init_inputs():
    return [32, 2]
"""


def test_a_strict_seed_with_encoder_layers_passes_the_harness(
    interpreter: None, cpu_evaluator: LocalEvaluator
) -> None:
    from kernelevolve.platforms import load_platform
    from kernelevolve.types import EvalRequest, EvalSettings, KernelSpec, Status
    from kernelevolve.variation.compiler_seed import CompilerSeedOperator
    from tests.proposal_context import seed_context

    platform = load_platform("cpu")
    # eval mode: PyTorch's fused encoder path (what this seed replaces) runs only there
    spec = KernelSpec(
        name="encoder_bf", reference_source=BATCH_FIRST_ENCODER, atol=1e-4, rtol=1e-4, mode="eval"
    )
    seeds = CompilerSeedOperator().propose(seed_context(spec, platform))
    library = [s for s in seeds if not s.metadata["own_kernels"]]
    assert library and "aten._transformer_encoder_layer_fwd" in " ".join(library[0].metadata["library_calls"])
    (own,) = [s for s in seeds if s.metadata["own_kernels"]]
    assert "_own_transformer_encoder_layer(" in own.source and "_encoder_layer_fwd.default" not in own.source
    assert own.metadata["library_calls"] == [] and not check_source(own.source, "triton", True)
    settings = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1)  # strict by default
    report = cpu_evaluator.submit(EvalRequest(own, spec, platform.name, settings)).result()
    assert report.status is Status.OK, report.feedback


@pytest.mark.gpu
@needs_cuda
@needs_kernelbench
def test_l3_32s_strict_seed_passes_the_harness_on_a_gpu() -> None:
    """KernelBench's L3/32 (a patch convolution, six batch-first encoder layers, Linear layers): every
    library call ours, through the harness at fp32's 1e-4 in strict mode."""
    from kernelevolve.bench.kernelbench.problems import load_problem, problem_to_spec
    from kernelevolve.platforms import load_platform
    from kernelevolve.types import Status
    from kernelevolve.variation.compiler_seed import CompilerSeedOperator
    from tests.proposal_context import seed_context

    platform_name = gpu_platform_name()
    spec = problem_to_spec(load_problem(KERNELBENCH, 3, 32))
    seeds = CompilerSeedOperator().propose(seed_context(spec, load_platform(platform_name)))
    own = [s for s in seeds if s.metadata["own_kernels"]]
    assert own and all("_own_transformer_encoder_layer(" in s.source for s in own)
    reports = harness_reports(own, spec, platform_name)
    assert any(r.status is Status.OK for r in reports), [r.feedback for r in reports]
