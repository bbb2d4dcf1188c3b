"""Inductor's pointwise kernel after our convolution, fused into the convolution's store (own-kernel
compiler seeds, compiler/gemm_epilogue.py): the rendered seeds run under Triton's interpreter
(tests/conftest.py), and the fused kernels are also built for sm_90 without a GPU."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from kernelevolve.platforms import load_platform
from kernelevolve.types import Candidate, KernelSpec
from kernelevolve.variation.compiler_seed import CompilerSeedOperator
from kernelevolve.variation.tunables import apply_values
from tests.gpu import gpu_platform_name, harness_reports, needs_cuda
from tests.proposal_context import seed_context
from tests.source_module import build_for_hopper, count_pointwise_launches, load_source

# A transposed 3-D convolution, then a shift, hardswish and a product with the convolution's own output:
# one pointwise kernel over the convolution's NCDHW output (as KernelBench L2/26)
REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.conv = nn.ConvTranspose3d(i, o, 3, stride=2, padding=1, output_padding=1)
        self.shift = nn.Parameter(torch.randn(o, 1, 1, 1))

    def forward(self, x):
        y = self.conv(x)
        return torch.nn.functional.hardswish(y + self.shift) * y

def get_inputs():
    return [torch.randn(2, 4, 5, 6, 7)]

def get_init_inputs():
    return [4, 6]
"""


def _own_seed(reference: str) -> Candidate:
    spec = KernelSpec(name="conv_epilogue", reference_source=reference, atol=1e-4, rtol=1e-4)
    seeds = CompilerSeedOperator(strict=True).propose(seed_context(spec, load_platform("cpu")))
    (own,) = [c for c in seeds if c.metadata["own_kernels"]]
    return own


def test_the_seed_hands_the_launch_to_the_convolution() -> None:
    source = _own_seed(REFERENCE).source
    call = source[source.index("def _call_s0") :]
    assert "epilogue=(_ke_conv_kernel_triton_poi" in call and "_ke_conv_taps_kernel_triton_poi" in call
    # the output is made by `_conv`: the launch's arguments name it None
    assert "(None, arg0_1, 20160)" in call and "\n    _launch_triton_poi" not in call
    assert 'CONV_EPILOGUE = "fused"  # tune: "fused", "separate"' in source
    assert "MM_EPILOGUE" not in source  # no GEMM here


@pytest.mark.parametrize(
    ("values", "launches"),
    [
        ({"CONV_LOOP": "taps"}, 0),
        ({"CONV_LOOP": "fused"}, 0),
        ({"CONV_EPILOGUE": "separate"}, 1),
    ],
    ids=["taps_loop", "fused_loop", "separate"],
)
def test_the_fused_seed_matches_the_reference(
    tmp_path: Path, values: dict[str, object], launches: int
) -> None:
    source = apply_values(_own_seed(REFERENCE).source, values)
    assert _pointwise_launches_matching(source, REFERENCE, (4, 6), tmp_path) == launches


def _pointwise_launches_matching(
    source: str, reference_source: str, init: tuple[int, ...], tmp_path: Path
) -> int:
    """How often the seed `source` launched its pointwise kernel in a forward that matched the reference's
    (both models built alike from `init`, on the same input)."""
    module = load_source(source, tmp_path, "conv_epilogue_seed")
    counted = count_pointwise_launches(module)
    namespace: dict[str, object] = {}
    exec(reference_source, namespace)  # noqa: S102  (the test's own reference)
    torch.manual_seed(0)
    reference = namespace["Model"](*init)  # type: ignore[operator]
    torch.manual_seed(0)
    candidate = module.ModelNew(*init)
    x = torch.randn(2, 4, 5, 6, 7)
    with torch.no_grad():
        torch.testing.assert_close(candidate(x), reference(x), atol=1e-4, rtol=1e-4)
    return len(counted)


def test_a_depthwise_convolution_launches_its_epilogue_after_the_direct_kernel(tmp_path: Path) -> None:
    depthwise = REFERENCE.replace(
        "nn.ConvTranspose3d(i, o, 3, stride=2, padding=1, output_padding=1)", "nn.Conv3d(i, o, 3, groups=i)"
    ).replace("[4, 6]", "[4, 8]")
    own = _own_seed(depthwise)
    launches = _pointwise_launches_matching(own.source, depthwise, (4, 8), tmp_path)
    assert launches == ("epilogue=(" in own.source)  # fused by the rendering, launched by `_conv`


# Built without launching, in a process of its own: Triton decides at import whether it interprets.
_HOPPER_BUILD = """
import importlib.util, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
for name in sys.argv[2:]:
    kernel = getattr(module, name)
    constants = dict(TRANSPOSED=True, HAS_BIAS=True, PRECISION="bf16x3", HAS_EPILOGUE=True, STORE_Y=False,
                     BLOCK_M=64, BLOCK_N=32, BLOCK_K=32)
    types = {n: "constexpr" if n in constants else "*fp32" if n.endswith("_ptr") or n[0] == "e" and n[1:].isdigit()
             else "i64" if n.startswith("s") else "i32" for n in kernel.arg_names}
    indexed = {(kernel.arg_names.index(n),): v for n, v in constants.items()}
    triton.compile(ASTSource(kernel, types, indexed), target=GPUTarget("cuda", 90, 32))
"""


def test_the_fused_convolution_kernels_compile_for_hopper(tmp_path: Path) -> None:
    pytest.importorskip("triton.backends.nvidia.compiler")
    source = _own_seed(REFERENCE).source
    path = tmp_path / "conv_epilogue_seed.py"
    path.write_text(source)
    suffix = "triton_poi_fused_add_hardswish_mul_0_s0"
    kernels = [f"_ke_conv_kernel_{suffix}", f"_ke_conv_taps_kernel_{suffix}"]
    build_for_hopper(_HOPPER_BUILD, str(path), *kernels, cache=tmp_path / "triton_cache")


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("precision", ["ieee", "bf16x3"])
def test_the_fused_seed_passes_the_harness_on_a_gpu(precision: str) -> None:
    """Inductor's CUDA code for the reference, our convolution with its epilogue fused, through an
    evaluation child on the GPU; the same seed with the epilogue launched separately too."""
    from kernelevolve.types import Status

    platform = load_platform(gpu_platform_name())
    reference = REFERENCE.replace("torch.randn(2, 4, 5, 6, 7)", "torch.randn(8, 16, 12, 14, 16)").replace(
        "[4, 6]", "[16, 24]"
    )
    spec = KernelSpec(name="conv_epilogue_gpu", reference_source=reference, atol=1e-4, rtol=1e-4)
    seeds = CompilerSeedOperator(strict=True).propose(seed_context(spec, platform))
    own = [c for c in seeds if c.metadata["own_kernels"] and "epilogue=(" in c.source]
    assert own, "no own seed with a fused epilogue"
    fused = dataclasses.replace(
        own[0], source=apply_values(own[0].source, {"CONV_FP32_PRECISION": precision})
    )
    separate = dataclasses.replace(fused, source=apply_values(fused.source, {"CONV_EPILOGUE": "separate"}))
    for report in harness_reports([fused, separate], spec, platform.name):
        assert report.status is Status.OK, report.feedback
