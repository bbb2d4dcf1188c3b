"""Our implicit-GEMM convolution (compiler seeds, strict mode) against torch at exact fp32, both K loops.

CONV_LOOP "fused" steps through (input channel x tap) flattened; "taps" through taps, then channels,
with a transposed convolution's outputs split by stride phase so that only the taps reaching a phase
are visited. Each case runs with both loops under Triton's interpreter (tests/conftest.py), with blocks
small enough for several M and N tiles and K steps, sizes that no block and (mostly) no stride divides,
and an output filled with NaN before the kernel runs, so a pixel no program writes fails the comparison.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from kernelevolve.variation.compiler.own_conv import CONV_SOURCE, CONV_TUNABLES
from kernelevolve.variation.tunables import apply_values, find_tunables
from tests.gpu import gpu_platform_name
from tests.source_module import load_source

SMALL_BLOCKS = {"CONV_BLOCK_M": 32, "CONV_BLOCK_N": 16, "CONV_BLOCK_K": 16}
LOOPS = ("fused", "taps")


def _conv_module(directory: Path, **values: object) -> ModuleType:
    """CONV_SOURCE as a module of its own (Triton reads kernel source from a real file); its outputs are
    allocated filled with NaN."""
    header = "import torch\nimport triton\nimport triton.language as tl\n"
    source = apply_values("\n".join([header, *CONV_TUNABLES, CONV_SOURCE]), {**SMALL_BLOCKS, **values})
    module = load_source(source, directory, "own_conv_" + "_".join(str(v) for v in values.values()))

    class NanTorch(SimpleNamespace):
        def __getattr__(self, attr: str) -> Any:
            return getattr(torch, attr)

    module.torch = NanTorch(  # type: ignore[attr-defined]
        empty=lambda *a, **k: torch.full(a[0], float("nan"), **k),
        empty_strided=lambda size, stride, **k: torch.empty_strided(size, stride, **k).fill_(float("nan")),
    )
    return module


Case = tuple[int, bool, tuple[int, ...], tuple[int, ...], dict[str, Any], bool, str]


def _case(
    dims: int, transposed: bool, x: tuple, w: tuple, bias: bool = True, layout: str = "", **kw: Any
) -> Case:
    """(dims, transposed, input shape, weight shape, keywords, bias, output memory format)."""
    return dims, transposed, x, w, kw, bias, layout


CASES: dict[str, Case] = {
    # plain
    "conv1d_strided_dilated": _case(1, False, (2, 5, 41), (6, 5, 3), stride=3, padding=1, dilation=4),
    "conv1d_grouped": _case(1, False, (1, 8, 37), (20, 4, 4), bias=False, stride=2, groups=2),
    "conv2d_grouped_channels_last": _case(
        2, False, (2, 6, 9, 11), (4, 3, 3, 2), layout="channels_last",
        stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2,
    ),
    "conv2d_many_channels": _case(2, False, (1, 20, 7, 6), (18, 20, 3, 3), padding=1),
    "conv3d": _case(3, False, (1, 3, 5, 6, 7), (4, 3, 3, 3, 3), stride=(1, 2, 1), padding=1),
    # transposed, stride 1 (one phase)
    "transposed1d_dilated": _case(1, True, (2, 4, 19), (4, 6, 5), dilation=3),
    "transposed2d_many_channels": _case(2, True, (1, 20, 6, 7), (20, 18, 3, 7), bias=False, padding=(1, 3)),
    # transposed with stride: phases, some taking no tap at all
    "transposed1d_stride2_dilation2": _case(1, True, (2, 5, 17), (5, 6, 3), stride=2, padding=1, dilation=2),
    "transposed1d_stride3": _case(
        1, True, (2, 4, 7), (4, 2, 5), bias=False, stride=3, padding=2, dilation=2, output_padding=1
    ),
    "transposed2d_grouped_channels_last": _case(
        2, True, (2, 4, 5, 6), (4, 3, 3, 3), layout="channels_last",
        stride=2, padding=1, output_padding=1, groups=2,
    ),
    "transposed2d_grouped_dilated": _case(
        2, True, (1, 4, 6, 5), (4, 5, 3, 5), stride=(2, 3), padding=(1, 2), dilation=(2, 1), groups=2
    ),
    "transposed2d_stride_over_kernel": _case(
        2, True, (1, 3, 4, 5), (3, 2, 3, 3), stride=5, padding=1, dilation=2
    ),
    "transposed3d_grouped_channels_last": _case(
        3, True, (1, 4, 3, 4, 5), (4, 2, 3, 3, 3), layout="channels_last_3d", stride=2, padding=1, groups=2
    ),
    "transposed3d_dilated": _case(
        3, True, (1, 3, 3, 3, 4), (3, 4, 3, 3, 3), bias=False, stride=2, padding=1, dilation=2
    ),
    "transposed3d_output_padding": _case(
        3, True, (1, 2, 3, 4, 3), (2, 3, 2, 3, 3), bias=False,
        stride=(2, 3, 1), padding=(0, 1, 1), output_padding=(1, 2, 0),
    ),
}  # fmt: skip


def _reference(
    dims: int, transposed: bool, x: torch.Tensor, w: torch.Tensor, b: Any, kw: dict
) -> torch.Tensor:
    """torch's convolution in fp64 on the CPU, rounded to fp32."""
    function = getattr(F, f"conv_transpose{dims}d" if transposed else f"conv{dims}d")
    return function(x.double(), w.double(), None if b is None else b.double(), **kw).float()


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    directory = tmp_path_factory.mktemp("own_conv")
    return {loop: _conv_module(directory, CONV_LOOP=loop) for loop in LOOPS}


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("case", list(CASES))
def test_convolution_matches_torch(
    interpreter: None, modules: dict[str, ModuleType], case: str, loop: str
) -> None:
    dims, transposed, x_shape, w_shape, kw, has_bias, layout = CASES[case]
    torch.manual_seed(0)
    x, w = torch.randn(x_shape), torch.randn(w_shape)
    out_channels = w_shape[1] * kw.get("groups", 1) if transposed else w_shape[0]
    bias = torch.randn(out_channels) if has_bias else None
    expected = _reference(dims, transposed, x, w, bias, kw)
    out_stride = None
    if layout:  # the layout Inductor's next kernel asks for
        x = x.to(memory_format=getattr(torch, layout))
        out_stride = torch.empty(expected.shape).to(memory_format=getattr(torch, layout)).stride()
    got = modules[loop]._conv(x, w, bias, transposed=transposed, out_stride=out_stride, **kw)
    assert got.shape == expected.shape and (out_stride is None or got.stride() == out_stride)
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_tensor_core_precision_launches_on_the_phases(interpreter: None, tmp_path: Path) -> None:
    # The interpreter computes "tf32x3" dots in fp32: this checks that the choice reaches the taps kernel.
    conv = _conv_module(tmp_path, CONV_LOOP="taps", CONV_FP32_PRECISION="tf32x3")
    dims, transposed, x_shape, w_shape, kw, _, _ = CASES["transposed2d_grouped_dilated"]
    torch.manual_seed(0)
    x, w = torch.randn(x_shape), torch.randn(w_shape)
    got = conv._conv(x, w, None, transposed=True, **kw)
    torch.testing.assert_close(got, _reference(dims, transposed, x, w, None, kw), atol=1e-4, rtol=1e-4)


def test_seeds_take_fused_for_few_channels_and_taps_otherwise(interpreter: None, tmp_path: Path) -> None:
    """The seed's CONV_LOOP is "auto": "taps" (faster on the H200 for transposed convolutions, and for
    plain ones of 16 or more channels), "fused" for plain convolutions of fewer than 16 input channels per
    group, whose taps loop pads each tap's K step (L2/82, 8 channels: 18.3 ms fused against 32.2 ms).
    The tuner can still pick either loop for every convolution."""
    tunable = {t.name: t for t in find_tunables("\n".join(CONV_TUNABLES))}["CONV_LOOP"]
    assert tunable.declared and tunable.value == "auto" and set(tunable.choices) == {"auto", "fused", "taps"}
    launched: list[str] = []

    def recording(loop: str) -> ModuleType:
        conv = _conv_module(tmp_path, CONV_LOOP=loop)

        class Recorded:
            def __init__(self, name: str) -> None:
                self.name, self.kernel = name, getattr(conv, name)

            def __getitem__(self, grid: object) -> object:
                launched.append(self.name)
                return self.kernel[grid]

        conv._ke_conv_kernel = Recorded("_ke_conv_kernel")
        conv._ke_conv_taps_kernel = Recorded("_ke_conv_taps_kernel")
        return conv

    few, many = torch.randn(1, 2, 5, 4), torch.randn(1, 16, 5, 4)
    for loop in ("taps", "fused"):
        conv = recording(loop)
        conv._conv(few, torch.randn(2, 2, 3, 3), None, stride=(1, 2), transposed=True)
        conv._conv(few, torch.randn(2, 2, 3, 3), None, stride=2)
    assert launched == ["_ke_conv_taps_kernel"] * 2 + ["_ke_conv_kernel"] * 2
    launched.clear()
    conv = recording("auto")
    conv._conv(few, torch.randn(2, 2, 3, 3), None, stride=(1, 2), transposed=True)  # transposed: taps
    conv._conv(few, torch.randn(2, 2, 3, 3), None, stride=2)  # 2 channels: fused
    conv._conv(many, torch.randn(4, 16, 3, 3), None)  # 16 channels: taps
    conv._conv(many, torch.randn(4, 8, 3, 3), None, groups=2)  # 8 per group: fused
    assert launched == ["_ke_conv_taps_kernel", "_ke_conv_kernel", "_ke_conv_taps_kernel", "_ke_conv_kernel"]


def test_an_unknown_loop_names_the_choices(tmp_path: Path) -> None:
    conv = _conv_module(tmp_path, CONV_LOOP="tiles")
    with pytest.raises(ValueError, match="'auto', 'taps', 'fused'"):
        conv._conv(torch.randn(1, 2, 5), torch.randn(2, 2, 3))


# A convolution with a pointwise tail, and a strided transposed one, at sizes that no block divides.
GPU_CONV_REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = MODULE

    def forward(self, x):
        return torch.relu(self.conv(x)) * 0.5

def get_inputs():
    return [torch.randn(SHAPE)]

def get_init_inputs():
    return []
"""
GPU_CONV_CASES = {
    "conv2d": ("nn.Conv2d(24, 40, 3, padding=1)", "6, 24, 37, 29"),
    "transposed2d_strided": ("nn.ConvTranspose2d(24, 40, 3, stride=2, padding=1)", "6, 24, 19, 15"),
}


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(GPU_CONV_CASES))
def test_every_own_seed_precision_passes_the_harness_on_a_gpu(case: str) -> None:
    """Our convolution's seeds on the GPU, in both layouts and at every fp32 precision (exact, 3xTF32,
    3xBF16), through an evaluation child against the exact-fp32 reference."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelevolve.eval.local import LocalEvaluator
    from kernelevolve.platforms import load_platform
    from kernelevolve.types import EvalRequest, EvalSettings, KernelSpec, Status
    from kernelevolve.variation.compiler_seed import CompilerSeedOperator
    from tests.proposal_context import seed_context

    platform = load_platform(gpu_platform_name())
    module, shape = GPU_CONV_CASES[case]
    reference = GPU_CONV_REFERENCE.replace("MODULE", module).replace("SHAPE", shape)
    spec = KernelSpec(name=f"own_conv_{case}", reference_source=reference, atol=1e-4, rtol=1e-4)
    seeds = CompilerSeedOperator(strict=True).propose(seed_context(spec, platform))
    precisions = {c.metadata.get("fp32_precision", "ieee") for c in seeds}
    assert precisions == {"ieee", "tf32x3", "bf16x3"}, precisions
    settings = EvalSettings(
        correctness_trials=3, timing_trials=10, warmup_trials=2, measure_compile_baseline=False
    )
    with LocalEvaluator(platform, settings) as evaluator:
        futures = [(c, evaluator.submit(EvalRequest(c, spec, platform.name, settings))) for c in seeds]
        for candidate, future in futures:
            report = future.result()
            label = f"{candidate.metadata.get('fp32_precision', 'ieee')}, layout_opt {candidate.metadata.get('layout_optimization', True)}"
            assert report.status is Status.OK, f"{label}: {report.feedback}"
