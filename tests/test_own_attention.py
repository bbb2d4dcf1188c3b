"""Our Triton attention in place of Inductor's fused attention op (compiler seeds, strict mode).

The helpers run under Triton's interpreter on CPU (tests/conftest.py): their outputs, layouts and
log-sum-exps against the library ops themselves, then whole strict seeds through the harness; the kernel
is also compiled for sm_90 without a GPU.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest
import torch

from kernelevolve.eval.static.checks import check_source
from kernelevolve.variation.compiler.own_attention import ATTENTION_SOURCE, ATTENTION_TUNABLES, OwnAttention
from kernelevolve.variation.tunables import apply_values
from tests.gpu import gpu_platform_name, harness_reports, needs_cuda
from tests.source_module import build_for_hopper, load_source

if TYPE_CHECKING:
    from kernelevolve.eval.local import LocalEvaluator

SMALL_BLOCKS = {"ATTN_BLOCK_M": 16, "ATTN_BLOCK_N": 16}


def _attention_module(tmp_path: Path, **values: object) -> ModuleType:
    header = "import torch\nimport triton\nimport triton.language as tl\n"
    source = apply_values(
        "\n".join([header, *ATTENTION_TUNABLES, ATTENTION_SOURCE]), {**SMALL_BLOCKS, **values}
    )
    return load_source(source, tmp_path, "own_attention_candidate")


def _qkv(batch: int, heads: int, seq_q: int, seq_k: int, dim: int, value_dim: int) -> list[torch.Tensor]:
    torch.manual_seed(0)
    # stored (seq, batch, heads, dim), as nn.MultiheadAttention's projections leave them, seen as (B, H, L, E)
    q = torch.randn(seq_q, batch, heads, dim).permute(1, 2, 0, 3)
    k = torch.randn(seq_k, batch, heads, dim).permute(1, 2, 0, 3)
    v = torch.randn(batch, heads, seq_k, value_dim)
    return [q, k, v]


@pytest.mark.parametrize(
    ("seq_q", "seq_k", "dim", "value_dim", "causal", "scale"),
    [
        (37, 37, 24, 24, False, None),  # no block divides the sequence; head size padded to 32
        (20, 45, 16, 40, False, 0.3),  # more keys than queries, another value size, a given scale
        (33, 33, 8, 8, True, None),  # causal, head size below a dot's 16
    ],
)
def test_the_efficient_attention_helper_matches_the_op_and_its_layout(
    tmp_path: Path, seq_q: int, seq_k: int, dim: int, value_dim: int, causal: bool, scale: float | None
) -> None:
    module = _attention_module(tmp_path, ATTN_FP32_PRECISION="ieee")
    q, k, v = _qkv(2, 3, seq_q, seq_k, dim, value_dim)
    out, lse, seed, offset = module._own_efficient_attention(q, k, v, None, True, 0.0, causal, scale=scale)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    # the CUDA op's layouts, from its meta function
    meta = [t.to("meta") for t in (q, k, v)]
    layout = torch.ops.aten._scaled_dot_product_efficient_attention.default(
        *meta, None, True, 0.0, causal, scale=scale
    )
    assert (out.shape, out.stride()) == (layout[0].shape, layout[0].stride())
    assert (lse.shape, lse.stride()) == (layout[1].shape, layout[1].stride())
    assert seed.shape == offset.shape == () and seed.dtype == offset.dtype == torch.int64
    # log-sum-exp of the scaled scores, natural log, over the real query rows
    scores = q @ k.transpose(-1, -2) * (dim**-0.5 if scale is None else scale)
    if causal:
        scores = scores.masked_fill(torch.ones(seq_q, seq_k).triu(1).bool(), float("-inf"))
    torch.testing.assert_close(lse[..., :seq_q], scores.logsumexp(-1), atol=1e-5, rtol=1e-5)
    no_lse = module._own_efficient_attention(q, k, v, None, False)[1]
    assert no_lse.shape == (2, 3, 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_the_cuda_flash_helper_gives_the_ops_outputs_in_its_meta_layouts(
    tmp_path: Path, dtype: torch.dtype
) -> None:
    module = _attention_module(tmp_path)
    q, k, v = (t.to(dtype) for t in _qkv(2, 2, 19, 23, 16, 16))
    got = module._own_flash_attention(q, k, v, 0.0, True, scale=0.2)
    meta = torch.ops.aten._scaled_dot_product_flash_attention.default(
        *(t.to("meta") for t in (q, k, v)), 0.0, True, scale=0.2
    )
    assert len(got) == len(meta)
    for ours, theirs in zip(got, meta, strict=True):
        if isinstance(theirs, torch.Tensor):
            assert (ours.shape, ours.stride(), ours.dtype) == (theirs.shape, theirs.stride(), theirs.dtype)
        else:
            assert ours == theirs
    expected = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), is_causal=True, scale=0.2
    )
    tolerance = 1e-5 if dtype == torch.float32 else 2e-3
    torch.testing.assert_close(got[0].float(), expected, atol=tolerance, rtol=tolerance)


def test_the_cpu_flash_helper_matches_the_op_its_layouts_and_lse(tmp_path: Path) -> None:
    module = _attention_module(tmp_path)
    q, k, v = _qkv(2, 2, 19, 19, 8, 8)
    for causal in (False, True):
        out, lse = module._own_cpu_flash_attention(q, k, v, is_causal=causal)
        op_out, op_lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(
            q, k, v, is_causal=causal
        )
        torch.testing.assert_close(out, op_out, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(lse, op_lse, atol=1e-5, rtol=1e-5)
        assert out.stride() == op_out.stride() == q.stride() and lse.stride() == op_lse.stride()


def test_what_the_kernel_does_not_do_fails_with_a_reason(tmp_path: Path) -> None:
    module = _attention_module(tmp_path)
    q, k, v = _qkv(1, 1, 4, 4, 8, 8)
    with pytest.raises(NotImplementedError, match="mask"):
        module._own_efficient_attention(q, k, v, torch.zeros(1, 1, 4, 4), False)
    with pytest.raises(NotImplementedError, match="dropout"):
        module._own_cpu_flash_attention(q, k, v, 0.1)
    big = torch.randn(1, 1, 4, 512)
    with pytest.raises(ValueError, match="up to 256"):
        module._own_efficient_attention(big, big, big, None, False)


def test_both_spellings_of_the_op_become_our_helper() -> None:
    host = (
        "buf4 = torch.ops.aten._scaled_dot_product_efficient_attention.default(buf1, buf2, buf3, None, False)\n"
        "buf9 = aten._scaled_dot_product_flash_attention_for_cpu.default(buf6, buf7, buf8, scale=0.5)\n"
        "buf11 = aten._scaled_dot_product_flash_attention.default(buf6, buf7, buf8, 0.0, True)\n"
        "buf10 = torch.ops.aten.mm.default(buf5, buf5)\n"
    )
    rewritten = ast.unparse(OwnAttention().visit(ast.parse(host)))
    assert "_own_efficient_attention(buf1, buf2, buf3, None, False)" in rewritten
    assert "_own_cpu_flash_attention(buf6, buf7, buf8, scale=0.5)" in rewritten
    assert "_own_flash_attention(buf6, buf7, buf8, 0.0, True)" in rewritten
    assert "torch.ops.aten.mm.default(buf5, buf5)" in rewritten  # not ours to replace


_HOPPER_BUILD = """
import importlib.util, itertools, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
kernel = module._ke_attention_kernel
for precision, causal, lse, dims in itertools.product(["tf32x3", "ieee"], [False, True], [False, True], [(64, 64), (24, 40)]):
    constants = dict(HEAD_DIM=dims[0], VALUE_DIM=dims[1], BLOCK_D=max(16, triton.next_power_of_2(dims[0])),
                     BLOCK_DV=max(16, triton.next_power_of_2(dims[1])), BLOCK_M=64, BLOCK_N=64,
                     IS_CAUSAL=causal, STORE_LSE=lse, PRECISION=precision)
    types = {n: "constexpr" if n in constants else "*fp32" if n.endswith("_ptr") else
             "fp32" if n == "qk_scale" else "i32" for n in kernel.arg_names}
    indexed = {(kernel.arg_names.index(n),): v for n, v in constants.items()}
    triton.compile(ASTSource(kernel, types, indexed), target=GPUTarget("cuda", 90, 32))
"""


def test_the_kernel_compiles_for_hopper(tmp_path: Path) -> None:
    pytest.importorskip("triton.backends.nvidia.compiler")
    _attention_module(tmp_path)  # writes the candidate file
    build_for_hopper(
        _HOPPER_BUILD, str(tmp_path / "own_attention_candidate.py"), cache=tmp_path / "triton_cache"
    )


ENCODER_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    # KernelBench L3/28's encoder, small: sequence-first, so nn.MultiheadAttention reaches the fused op
    def __init__(self, dim, heads):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=dim, nhead=heads, dim_feedforward=2 * dim, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


def get_inputs():
    return [torch.randn(21, 2, 32)]


def get_init_inputs():
    return [32, 2]
"""


def test_strict_seeds_with_fused_attention_pass_the_harness_on_cpu(cpu_evaluator: LocalEvaluator) -> None:
    """The sdpa spec (fp16, a bare fused op) and a transformer encoder (GEMMs, attention, layer norms):
    the seed with our kernels in place of every library call runs in strict mode and matches."""
    from kernelevolve.platforms import load_platform
    from kernelevolve.specs.loading import resolve_spec
    from kernelevolve.types import EvalRequest, EvalSettings, KernelSpec, Status
    from kernelevolve.variation.compiler_seed import CompilerSeedOperator
    from tests.proposal_context import seed_context

    platform = load_platform("cpu")
    settings = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1)  # strict by default
    encoder = KernelSpec(name="encoder", reference_source=ENCODER_REFERENCE, atol=1e-4, rtol=1e-4)
    for spec in (resolve_spec("sdpa", platform), encoder):
        own = [  # the fused op's (the capture with attention as matmuls has our GEMM in its place)
            c
            for c in CompilerSeedOperator().propose(seed_context(spec, platform))
            if c.metadata["own_kernels"] and not c.metadata.get("attention_as_matmuls")
        ]
        assert len(own) == 1, spec.name
        (seed,) = own
        assert "_own_cpu_flash_attention(" in seed.source and "attention_for_cpu.default" not in seed.source
        assert seed.metadata["library_calls"] == []
        assert not check_source(seed.source, "triton", True)
        report = cpu_evaluator.submit(EvalRequest(seed, spec, platform.name, settings)).result()
        assert report.status is Status.OK, f"{spec.name}: {report.feedback}"


@pytest.mark.gpu
@needs_cuda
def test_on_a_gpu_the_efficient_helper_matches_the_op_and_the_encoders_strict_seed_passes(
    tmp_path: Path,
) -> None:
    """Compiled for the GPU (not interpreted): the helper against the CUDA op at the fp32 tolerance, and
    the transformer encoder's strict seed (GEMMs, attention, layer norms) through the harness."""
    from kernelevolve.types import KernelSpec, Status
    from kernelevolve.variation.compiler_seed import CompilerSeedOperator
    from tests.proposal_context import seed_context

    module = _attention_module(tmp_path, ATTN_BLOCK_M=64, ATTN_BLOCK_N=64)
    q, k, v = (t.cuda() for t in _qkv(2, 8, 197, 197, 64, 64))  # ViT-like: 197 tokens, head size 64
    for causal in (False, True):
        out = module._own_efficient_attention(q, k, v, None, False, 0.0, causal)[0]
        expected = torch.ops.aten._scaled_dot_product_efficient_attention.default(
            q, k, v, None, False, 0.0, causal
        )[0]
        assert out.stride() == expected.stride()
        torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)
        half = [t.half() for t in (q, k, v)]  # fp16: Inductor keeps the flash op
        out = module._own_flash_attention(*half, 0.0, causal)[0]
        expected = torch.ops.aten._scaled_dot_product_flash_attention.default(*half, 0.0, causal)[0]
        assert out.stride() == expected.stride()
        torch.testing.assert_close(out, expected, atol=2e-3, rtol=2e-3)

    from kernelevolve.platforms import load_platform

    platform = load_platform(gpu_platform_name())
    encoder = KernelSpec(name="encoder", reference_source=ENCODER_REFERENCE, atol=1e-4, rtol=1e-4)
    own = [
        c
        for c in CompilerSeedOperator().propose(seed_context(encoder, platform))
        if c.metadata["own_kernels"]
    ]
    assert own and all("_own_efficient_attention(" in c.source for c in own)
    for report in harness_reports(own, encoder, platform.name):
        assert report.status is Status.OK, report.feedback
