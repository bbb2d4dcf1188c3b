"""cuDNN convolutions split into TF32 and BF16 passes (compiler/library_conv.py): the split, its accuracy
with tensor cores emulated on the CPU, the rendering of permissive GPU seeds, and their twins."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from kernelevolve.eval.static.checks import check_source
from kernelevolve.search.graph import SearchGraph
from kernelevolve.types import Candidate
from kernelevolve.variation.compiler.library_conv import LIBRARY_CONV_SOURCE, LIBRARY_CONV_TUNABLES
from kernelevolve.variation.compiler.program import parse
from kernelevolve.variation.compiler.render import ShapeProgram, render
from kernelevolve.variation.compiler.tf32_split import TF32_SPLIT_KERNEL_SOURCE, TF32_SPLIT_SOURCE
from kernelevolve.variation.compiler_seed import (
    _tensor_core_twins,
    by_promise,
    eager_precision_passes,
    exact_fp32_slowdown,
    own_tf32_promising,
    with_tensor_cores,
)
from kernelevolve.variation.tunables import find_tunables
from tests.baselines_graph import graph_with_baselines
from tests.gpu import gpu_platform_name, harness_reports, needs_cuda

H200 = Path(__file__).parent / "fixtures" / "inductor_h200"
CONV_STAND_IN = (
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self, i, o, k):\n"
    "        super().__init__()\n        self.conv = nn.Conv2d(i, o, k)\n\n    def forward(self, x):\n"
    "        return x\n\ndef get_inputs():\n    return [torch.rand(2, 8, 8, 8)]\n\n"
    "def get_init_inputs():\n    return [8, 64, 3]\n"
)


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """What a TF32 tensor core reads of an fp32 operand (the low 13 mantissa bits dropped)."""
    return (t.view(torch.int32) & -8192).view(torch.float32)


def _helper_namespace(
    torch_module: Any, precision: str, benchmark: bool = False, split_layout: str = "input"
) -> dict[str, Any]:
    """The rendered helpers with their tunables set, calling `torch_module` for torch."""
    namespace: dict[str, Any] = {
        "torch": torch_module,
        "LIBRARY_CONV_FP32_PRECISION": precision,
        "LIBRARY_CONV_BENCHMARK": benchmark,
        "LIBRARY_CONV_SPLIT_LAYOUT": split_layout,
    }
    exec(TF32_SPLIT_SOURCE + LIBRARY_CONV_SOURCE, namespace)  # noqa: S102  (our own rendered helpers)

    # no Triton here: the GPU's fused split declines and PyTorch's ops run, whose values the kernel writes
    # bit for bit (test_the_fused_split_kernel_writes_what_pytorchs_ops_write_bit_for_bit)
    namespace["_ke_split_into"] = lambda *args: False
    namespace["_ke_split_triple_into"] = lambda *args: False
    return namespace


def _helpers(convolution: Any, precision: str = "tf32x3") -> dict[str, Any]:
    """The rendered helpers, with `torch.convolution` replaced by `convolution`."""
    fake_torch = SimpleNamespace(convolution=convolution, int32=torch.int32, float32=torch.float32)
    return _helper_namespace(fake_torch, precision)


def test_the_split_is_exact_keeps_the_layout_and_puts_hi_on_tf32s_mantissa() -> None:
    x = torch.randn(2, 8, 5, 5).to(memory_format=torch.channels_last) * 1e3
    hi, lo = _helpers(torch.convolution)["_ke_tf32_split"](x)
    assert torch.equal(hi + lo, x)
    assert torch.equal(_tf32(hi), hi) and (lo.abs() <= x.abs() * 2.0**-10).all()
    assert hi.is_contiguous(memory_format=torch.channels_last) and lo.stride() == x.stride()


def test_three_tf32_passes_meet_the_fp32_tolerance_where_one_pass_misses_it() -> None:
    """TF32 emulated: operands truncated to TF32, products exact and sums in fp32 (as on tensor cores);
    a KernelBench-like convolution (576 terms a sum), against fp64."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(64, 32, 3)
    x, weight, bias = torch.randn(2, 64, 20, 20), conv.weight.detach(), conv.bias.detach()
    args = ([1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    exact = F.conv2d(x.double(), weight.double(), bias.double())

    def tf32_convolution(a: torch.Tensor, b: torch.Tensor, c: Any, *rest: Any) -> torch.Tensor:
        return torch.convolution(_tf32(a), _tf32(b), c, *rest)

    three = _helpers(tf32_convolution)["_ke_convolution_3xtf32"](x, weight, bias, *args)
    one = tf32_convolution(x, weight, bias, *args)

    def worst(got: torch.Tensor) -> float:  # error over what atol=rtol=1e-4 allows
        return float(((got.double() - exact).abs() / (1e-4 + 1e-4 * exact.abs())).max())

    assert worst(three) < 0.05, worst(three)
    assert worst(one) > 1.0, worst(one)  # why one pass is no option at this tolerance


def _emulated_tensor_cores(a: torch.Tensor, b: torch.Tensor, c: Any, *rest: Any) -> torch.Tensor:
    """cuDNN on tensor cores, emulated: fp32 operands read as TF32; BF16 operands multiplied exactly,
    summed in fp32 and the output rounded to BF16 (a BF16 convolution's output dtype)."""
    if a.dtype == torch.bfloat16:
        return torch.convolution(a.float(), b.float(), None, *rest).to(torch.bfloat16)
    return torch.convolution(_tf32(a), _tf32(b), c, *rest)


SPLIT_CASES = [  # (module, input shape, channels last)
    (torch.nn.Conv2d(64, 32, 3), (2, 64, 20, 20), False),
    (torch.nn.Conv2d(64, 32, 3, groups=4), (2, 64, 20, 20), True),
    (torch.nn.ConvTranspose2d(32, 64, 4, stride=2, padding=1, groups=2), (2, 32, 12, 12), False),
    (torch.nn.ConvTranspose2d(32, 16, 3, stride=2, padding=1, output_padding=1), (2, 32, 12, 12), True),
    (torch.nn.Conv3d(16, 8, 3), (2, 16, 8, 8, 8), False),
    (torch.nn.ConvTranspose3d(16, 8, 3, stride=2, groups=2), (2, 16, 6, 6, 6), True),
]


def _split_case(
    case: int, device: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple[Any, ...], Any]:
    """SPLIT_CASES[case] on `device`: (input, weight, bias, torch.convolution's trailing arguments, the
    channels-last memory format the case is in, or None)."""
    torch.manual_seed(case)
    module, shape, channels_last = SPLIT_CASES[case]
    x = torch.randn(shape, device=device)
    weight, bias = module.weight.detach().to(device), module.bias.detach().to(device)
    layout = None
    if channels_last:
        layout = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
        x, weight = x.contiguous(memory_format=layout), weight.contiguous(memory_format=layout)
    transposed = isinstance(module, (torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d))
    padding = list(module.padding)  # type: ignore[arg-type]
    args = (
        list(module.stride),
        padding,
        list(module.dilation),
        transposed,
        list(module.output_padding),
        module.groups,
    )
    return x, weight, bias, args, layout


@pytest.mark.parametrize("split_layout", ["input", "channels_last"])
@pytest.mark.parametrize("case", range(len(SPLIT_CASES)))
def test_a_tf32_and_a_bf16_pass_meet_the_fp32_tolerance_in_every_convolution_kind(
    case: int, split_layout: str
) -> None:
    """Plain, grouped, transposed, 3-D, channels-last: the cross terms paired within each group in one
    BF16 pass leave errors far inside 1e-4 where one TF32 pass misses it, and keep the input's layout,
    also where the passes run in channels-last (LIBRARY_CONV_SPLIT_LAYOUT)."""
    x, weight, bias, args, layout = _split_case(case, "cpu")
    exact = torch.convolution(x.double(), weight.double(), bias.double(), *args)
    seen: list[bool] = []

    def convolution(a: torch.Tensor, *rest: Any) -> torch.Tensor:  # notes whether cuDNN got channels-last
        seen.append(a.dim() >= 4 and not a.is_contiguous() and _channels_last(a))
        return _emulated_tensor_cores(a, *rest)

    emulated = SimpleNamespace(
        **{
            name: getattr(torch, name)
            for name in ("empty", "sub", "int32", "float32", "bfloat16", "contiguous_format")
        },
        channels_last=torch.channels_last,
        channels_last_3d=torch.channels_last_3d,
        convolution=convolution,
    )
    helpers = _helper_namespace(emulated, "tf32_bf16", split_layout=split_layout)
    two = helpers["_ke_convolution_tf32_bf16"](x, weight, bias, *args)
    # both passes in channels-last where asked, or where the input already was
    assert seen == [split_layout == "channels_last" or layout is not None] * 2
    one = _emulated_tensor_cores(x, weight, bias, *args)

    def worst(got: torch.Tensor) -> float:  # error over what atol=rtol=1e-4 allows
        return float(((got.double() - exact).abs() / (1e-4 + 1e-4 * exact.abs())).max())

    assert two.dtype == torch.float32 and two.shape == exact.shape
    assert worst(two) < 0.1, worst(two)  # 0.02-0.04 in these cases
    assert worst(one) > 1.0, worst(one)
    if layout is not None:
        assert two.is_contiguous(memory_format=layout)
    else:
        assert two.is_contiguous()  # as the plain call returns it


@pytest.mark.parametrize("case", range(len(SPLIT_CASES)))
def test_one_tf32_pass_over_tripled_channels_meets_the_fp32_tolerance_in_every_convolution_kind(
    case: int,
) -> None:
    """tf32x3's three terms summed in one emulated TF32 convolution over [x_hi, x_lo, x_hi] and
    [w_hi, w_hi, w_lo] within each group: one call, the three-pass accuracy, the input's layout kept."""
    x, weight, bias, args, layout = _split_case(case, "cpu")
    exact = torch.convolution(x.double(), weight.double(), bias.double(), *args)
    calls: list[tuple[int, ...]] = []

    def convolution(a: torch.Tensor, b: torch.Tensor, *rest: Any) -> torch.Tensor:
        calls.append(tuple(a.shape))
        assert layout is None or a.is_contiguous(memory_format=layout)
        return _emulated_tensor_cores(a, b, *rest)

    emulated = SimpleNamespace(
        **{name: getattr(torch, name) for name in ("empty", "sub", "int32", "float32", "contiguous_format")},
        channels_last=torch.channels_last,
        channels_last_3d=torch.channels_last_3d,
        convolution=convolution,
    )
    helpers = _helper_namespace(emulated, "tf32x3_one_pass")
    one_pass = helpers["_ke_convolution_3xtf32_one_pass"](x, weight, bias, *args)
    assert calls == [(x.shape[0], 3 * x.shape[1], *x.shape[2:])]
    three = _helpers(_emulated_tensor_cores)["_ke_convolution_3xtf32"](x, weight, bias, *args)

    def worst(got: torch.Tensor) -> float:  # error over what atol=rtol=1e-4 allows
        return float(((got.double() - exact).abs() / (1e-4 + 1e-4 * exact.abs())).max())

    assert one_pass.dtype == torch.float32 and one_pass.shape == exact.shape
    assert worst(one_pass) < 0.05, worst(one_pass)
    torch.testing.assert_close(one_pass, three, atol=1e-5, rtol=1e-5)  # the same terms, summed elsewhere
    assert one_pass.is_contiguous(memory_format=layout or torch.contiguous_format)


def _channels_last(t: torch.Tensor) -> bool:
    return t.is_contiguous(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d)


def test_off_the_gpu_or_at_ieee_it_is_the_plain_call() -> None:
    calls: list[int] = []

    def counted(*args: Any) -> torch.Tensor:
        calls.append(1)
        return torch.convolution(*args)

    x, w = torch.randn(1, 4, 6, 6), torch.randn(8, 4, 3, 3)
    expected = torch.convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    for precision in ("tf32_bf16", "tf32x3", "tf32x3_one_pass", "tf32", "ieee"):  # the CPU has no TF32 to use
        calls.clear()
        got = _helpers(counted, precision)["_library_convolution"](
            x,
            w,
            stride=[1, 1],
            padding=[1, 1],
            dilation=[1, 1],
            transposed=False,
            output_padding=[0, 0],
            groups=1,
            bias=None,
        )  # by name, as Inductor's host code calls it
        assert torch.equal(got, expected) and calls == [1]


@pytest.mark.parametrize(
    ("input_channels", "weight_shape", "stride", "transposed", "groups", "pays"),
    [
        (672, (672, 1, 5, 5), [1, 1], False, 672, False),  # L3/21's depthwise 5x5: 25 products
        (40, (40, 1, 3, 3), [1, 1], False, 40, False),  # depthwise 3x3 (ShuffleNet's, MobileNet's)
        (16, (64, 16, 1, 1), [1, 1], False, 1, False),  # a 1x1 over 16 channels
        (240, (80, 80, 1, 1), [1, 1], False, 3, True),  # L3/25's grouped 1x1: 80 channels a group
        (8, (64, 8, 3, 3), [1, 1], False, 1, True),  # 72 products
        (64, (64, 1, 2, 2), [2, 2], True, 64, False),  # a depthwise transposed one, 1 tap an output
        (64, (64, 32, 4, 4), [2, 2], True, 1, True),  # 64 channels, 4 of 16 taps an output
        (8, (8, 16, 3, 3, 3), [1, 1, 1], False, 1, True),  # 3-D, 216 products
    ],
)
def test_the_splits_apply_where_each_output_sums_at_least_32_products(
    input_channels: int,
    weight_shape: tuple[int, ...],
    stride: list[int],
    transposed: bool,
    groups: int,
    pays: bool,
) -> None:
    split_pays = _helpers(torch.convolution)["_ke_split_pays"]
    x = torch.empty(1, input_channels, *([4] * (len(weight_shape) - 2)))
    assert split_pays(x, torch.empty(weight_shape), stride, transposed, groups) is pays


class _OnGpu(torch.Tensor):
    """A CPU tensor that says it is on the GPU, so the helper takes its GPU branch."""

    @property
    def is_cuda(self) -> bool:  # type: ignore[override]
        return True


class _TorchWithCountedConvolutions:
    """torch, with `torch.convolution` counted by the TF32 setting it ran under and cuDNN's flags a no-op."""

    def __init__(self) -> None:
        self.calls: list[bool] = []
        self.allow_tf32 = False
        cudnn = SimpleNamespace(
            flags=self._flags, enabled=True, benchmark=False, deterministic=False, allow_tf32=False
        )
        self.backends = SimpleNamespace(cudnn=cudnn)

    @contextmanager
    def _flags(self, allow_tf32: bool = False, **others: Any) -> Iterator[None]:
        before, self.allow_tf32 = self.allow_tf32, allow_tf32
        try:
            yield
        finally:
            self.allow_tf32 = before

    def convolution(self, *args: Any) -> torch.Tensor:
        self.calls.append(self.allow_tf32)
        return torch.convolution(
            *[a.as_subclass(torch.Tensor) if isinstance(a, torch.Tensor) else a for a in args]
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)


@pytest.mark.parametrize("precision", ["tf32_bf16", "tf32x3"])
def test_a_depthwise_convolution_stays_one_exact_call_under_either_split(precision: str) -> None:
    fake = _TorchWithCountedConvolutions()
    convolve = _helper_namespace(fake, precision)["_library_convolution"]
    args = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1], transposed=False, output_padding=[0, 0])
    x, w = torch.randn(1, 8, 6, 6), torch.randn(8, 1, 3, 3)
    depthwise = convolve(x.as_subclass(_OnGpu), w, None, groups=8, **args)
    assert fake.calls == [False]  # one call, exact fp32
    assert torch.allclose(depthwise.as_subclass(torch.Tensor), F.conv2d(x, w, padding=1, groups=8))
    fake.calls.clear()
    convolve(x.as_subclass(_OnGpu), torch.randn(16, 8, 3, 3), None, groups=1, **args)  # 72 products: split
    assert fake.calls == ([True, True] if precision == "tf32_bf16" else [True, True, True])


def _rendered(interpreter: bool) -> str:
    shaped = ShapeProgram("default", ((1,),), (), parse((H200 / "L2_69_0.py").read_text()))
    source, _ = render(CONV_STAND_IN, [shaped], "L2_69", interpreter=interpreter, own_kernels=False)
    return source


def test_permissive_gpu_seeds_call_the_library_convolution_through_the_helper() -> None:
    source = _rendered(interpreter=False)
    call = source[source.index("def _call_s0") :]
    assert "_library_convolution(" in call and "torch.convolution(" not in call
    assert LIBRARY_CONV_TUNABLES[1] in source
    assert not check_source(source, "triton", False)  # permissive: the library call is allowed
    interpreted = _rendered(interpreter=True)  # the CPU has no TF32: the plain call, no tunable
    assert "_library_convolution" not in interpreted and "LIBRARY_CONV_FP32_PRECISION" not in interpreted


def test_the_gpu_twins_are_the_splits_and_one_pass_and_without_evidence_the_splits_go_first() -> None:
    source = _rendered(interpreter=False)
    metadata = {"own_kernels": False, "library_calls": ["torch.convolution"]}
    twins = _tensor_core_twins(source, metadata, "compiler_seed")
    # cuDNN has no 3xBF16 here, and its three separate TF32 passes are a tuning choice only (two passes,
    # or one over tripled channels, compute the same terms)
    assert [t.metadata["fp32_precision"] for t in twins] == ["tf32_bf16", "tf32x3_one_pass", "tf32"]
    for twin in twins:
        values = {t.name: t.value for t in find_tunables(twin.source)}
        assert values["LIBRARY_CONV_FP32_PRECISION"] == twin.metadata["fp32_precision"]
    assert (
        "tf32x3" in next(t for t in find_tunables(source) if t.name == "LIBRARY_CONV_FP32_PRECISION").choices
    )
    plain = Candidate(source, "triton", "compiler_seed", "seed", metadata=metadata)
    own = Candidate("# own\n", "triton", "compiler_seed", "seed", metadata={"own_kernels": True})
    three = Candidate("# three\n", "triton", "tune", metadata={**metadata, "fp32_precision": "tf32x3"})
    # nothing says eager's own TF32 output meets the tolerance: the one-pass TF32 twin is not worth a try
    assert by_promise([own, plain, three, *twins]) == [twins[0], twins[1], three, plain, own]


def test_the_twin_goes_after_the_plain_call_where_exact_fp32_is_not_three_times_slower() -> None:
    """ResNet101 on the H200: exact 8.7 ms against TF32 5.5 ms, and the twin took 21.4 ms to the plain
    call's 9.0 ms; L2/61: exact 17.4 ms against TF32 3.5 ms, where three passes can pay."""
    metadata = {"own_kernels": False, "library_calls": ["torch.convolution"]}
    two, tripled = _tensor_core_twins(_rendered(interpreter=False), metadata, "compiler_seed")[:2]
    three = Candidate("# three\n", "triton", "tune", metadata={**metadata, "fp32_precision": "tf32x3"})
    plain = Candidate("# plain\n", "triton", "compiler_seed", "seed", metadata=metadata)
    network = exact_fp32_slowdown(graph_with_baselines(5.5, 8.7))
    assert network == pytest.approx(8.7 / 5.5)
    assert by_promise([three, tripled, two, plain], network) == [plain, two, tripled, three]
    # exact fp32 2.5x slower: two passes pay (the tripled pass counted as two), three do not
    assert by_promise([three, plain, tripled, two], exact_fp32_slowdown(graph_with_baselines(2.0, 5.0))) == [
        two,
        tripled,
        plain,
        three,
    ]
    transposed = exact_fp32_slowdown(graph_with_baselines(3.5, 17.4))
    assert by_promise([plain, three, tripled, two], transposed) == [two, tripled, three, plain]
    # not measured at exact precision (no convolution module), or no baselines yet: the splits first
    assert exact_fp32_slowdown(graph_with_baselines(2.7, None)) is None
    assert exact_fp32_slowdown(SearchGraph()) is None
    assert by_promise([plain, three, two], None) == [two, three, plain]


def test_one_tf32_pass_goes_first_only_where_eagers_own_tf32_output_met_the_tolerance() -> None:
    """ResNet18 (L3/9) on the H200: eager and torch.compile in TF32 both within 1e-4, our exact-fp32
    seeds at 0.30x torch.compile. L2/5: eager's TF32 output misses it, so one pass would too."""
    metadata = {"own_kernels": False, "library_calls": ["torch.convolution"]}
    two, tripled, one = _tensor_core_twins(_rendered(interpreter=False), metadata, "compiler_seed")
    three = Candidate("# three\n", "triton", "tune", metadata={**metadata, "fp32_precision": "tf32x3"})
    plain = Candidate("# plain\n", "triton", "compiler_seed", "seed", metadata=metadata)
    network = graph_with_baselines(0.79, 1.28, eager_within_tolerance=True)
    assert eager_precision_passes(network) is True
    # one pass first, then the plain call; the splits cost more where one pass meets the tolerance
    assert by_promise([plain, three, tripled, two, one], exact_fp32_slowdown(network), True) == [one, plain]
    transposed = graph_with_baselines(7.5, 28.4, eager_within_tolerance=False)
    assert eager_precision_passes(transposed) is False
    assert by_promise([plain, three, two, tripled, one], exact_fp32_slowdown(transposed), False) == [
        two,
        tripled,
        three,
        plain,
    ]
    # no convolution (eager is already at the candidates' precision), unchecked, or no baselines: unknown
    assert eager_precision_passes(graph_with_baselines(2.7, None, eager_within_tolerance=True)) is None
    assert eager_precision_passes(graph_with_baselines(0.79, 1.28)) is None
    assert eager_precision_passes(SearchGraph()) is None


def test_the_own_kernels_one_pass_twin_puts_convolutions_on_tf32_and_leaves_gemms_exact() -> None:
    """Eager runs convolutions in TF32 by default but matmuls in exact fp32: the twin does the same."""
    shaped = ShapeProgram("default", ((1,),), (), parse((H200 / "L2_69_0.py").read_text()))
    source, _ = render(CONV_STAND_IN, [shaped], "L2_69", interpreter=False, own_kernels=True)
    twin = with_tensor_cores(source, "tf32")
    assert twin is not None
    values = {t.name: t.value for t in find_tunables(twin)}
    assert values["CONV_FP32_PRECISION"] == "tf32"
    assert values.get("MM_FP32_PRECISION", "ieee") == "ieee"
    assert (
        with_tensor_cores("MM_FP32_PRECISION = 'ieee'  # tune: 'ieee', 'tf32x3', 'bf16x3'\n", "tf32") is None
    )


def test_own_kernels_go_3xbf16_first() -> None:
    """3xBF16 was faster than 3xTF32 on 16 of 19 H200 sweep problems that had both."""

    def own(precision: str | None) -> Candidate:
        extra = {"fp32_precision": precision} if precision else {}
        return Candidate(
            f"# {precision}\n", "triton", "compiler_seed", metadata={"own_kernels": True, **extra}
        )

    exact, tf32x3, bf16x3, tf32 = own(None), own("tf32x3"), own("bf16x3"), own("tf32")
    assert by_promise([exact, tf32x3, bf16x3, tf32]) == [bf16x3, tf32x3, exact]
    # where eager's TF32 convolutions met the tolerance and ran TF32 algorithms, ours in one pass go first
    assert by_promise([exact, tf32x3, bf16x3, tf32], 2.2, eager_passes=True) == [tf32, bf16x3, tf32x3, exact]


def test_own_one_pass_twins_need_eager_to_have_run_tf32_algorithms() -> None:
    """L2/69 on the H200: eager 1.553 ms at PyTorch's default, 1.554 ms exact, within tolerance: cuDNN ran
    no TF32 algorithm, and our own one-pass seed missed the tolerance (as on 13 of 17 such problems)."""
    own_tf32 = Candidate("# own tf32\n", "triton", "compiler_seed", metadata=_own("tf32"))
    own_bf16x3 = Candidate("# own bf16x3\n", "triton", "compiler_seed", metadata=_own("bf16x3"))
    assert own_tf32_promising(True, 2.2) and not own_tf32_promising(True, 1.0)
    assert not own_tf32_promising(False, 2.2) and not own_tf32_promising(None, 2.2)
    assert not own_tf32_promising(True, None)
    assert by_promise([own_bf16x3, own_tf32], 1.0, True) == [own_bf16x3]
    assert by_promise([own_bf16x3, own_tf32], 2.2, True) == [own_tf32, own_bf16x3]


def test_where_eager_passes_own_seeds_come_before_the_exact_library_calls() -> None:
    """With 12 evaluations and up to 14 seeds, own seeds ranked after every library seed were not reached
    on 8 H200 level-2 problems, which lost their strict result; one TF32 pass beats the exact cuDNN call
    wherever it passes, so the exact call waits behind our own seeds there."""
    library = {"own_kernels": False, "library_calls": ["torch.convolution"]}

    def seed(name: str, metadata: dict[str, object]) -> Candidate:
        return Candidate(f"# {name}\n", "triton", "compiler_seed", metadata=metadata)

    lib_exact, lib_one, lib_two, lib_three = (
        seed("lib exact", library),
        seed("lib tf32", {**library, "fp32_precision": "tf32"}),
        seed("lib tf32_bf16", {**library, "fp32_precision": "tf32_bf16"}),
        seed("lib tf32x3", {**library, "fp32_precision": "tf32x3"}),
    )
    own_exact, own_one, own_bf16x3, own_three = (
        seed("own exact", _own(None)),
        seed("own tf32", _own("tf32")),
        seed("own bf16x3", _own("bf16x3")),
        seed("own tf32x3", _own("tf32x3")),
    )
    everything = [lib_exact, lib_three, lib_two, lib_one, own_exact, own_three, own_bf16x3, own_one]
    # the library's splits are dropped: one TF32 pass meets the tolerance at less cost
    assert by_promise(everything, 2.2, True) == [
        lib_one,
        own_one,
        own_bf16x3,
        lib_exact,
        own_three,
        own_exact,
    ]
    # eager's TF32 output missed the tolerance: no one-pass seed, library calls first as before
    assert by_promise(everything, 4.0, False) == [
        lib_two,
        lib_three,
        lib_exact,
        own_bf16x3,
        own_three,
        own_exact,
    ]


def _own(precision: str | None) -> dict[str, object]:
    return {"own_kernels": True, **({"fp32_precision": precision} if precision else {})}


@pytest.mark.gpu
@needs_cuda
def test_the_split_twins_pass_the_harness_on_a_gpu() -> None:
    """A convolution with an epilogue at KernelBench's tolerance, through an evaluation child."""
    from kernelevolve.platforms import load_platform
    from kernelevolve.types import KernelSpec, Status
    from kernelevolve.variation.compiler_seed import CompilerSeedOperator
    from tests.proposal_context import seed_context

    platform = load_platform(gpu_platform_name())
    reference = (
        CONV_STAND_IN.replace("return x\n", "return torch.relu(self.conv(x)) * 0.5\n")
        .replace("torch.rand(2, 8, 8, 8)", "torch.rand(32, 32, 64, 64)")
        .replace("[8, 64, 3]", "[32, 64, 3]")
    )
    spec = KernelSpec(name="library_conv_gpu", reference_source=reference, atol=1e-4, rtol=1e-4)
    seeds = CompilerSeedOperator(strict=False).propose(seed_context(spec, platform))
    twins = [s for s in seeds if not s.metadata["own_kernels"] and s.metadata.get("fp32_precision")]
    assert "tf32_bf16" in {t.metadata["fp32_precision"] for t in twins}
    for twin, report in zip(twins, harness_reports(twins, spec, platform.name, strict=False), strict=True):
        assert report.status is Status.OK, (twin.metadata["fp32_precision"], report.feedback)


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("split_layout", ["input", "channels_last"])
@pytest.mark.parametrize("case", range(len(SPLIT_CASES)))
def test_a_tf32_and_a_bf16_pass_on_cudnn_meet_the_tolerance_and_leave_the_flags(
    case: int, split_layout: str
) -> None:
    x, weight, bias, args, layout = _split_case(case, "cuda")
    cudnn = torch.backends.cudnn
    before = cudnn.allow_tf32
    try:
        cudnn.allow_tf32 = False  # the harness's setting for candidates
        helpers = _helper_namespace(torch, "tf32_bf16", split_layout=split_layout)
        got = helpers["_library_convolution"](x, weight, bias, *args)
        assert got.is_contiguous(memory_format=layout or torch.contiguous_format)  # the plain call's layout
        assert cudnn.allow_tf32 is False
        cudnn.allow_tf32 = True
        one = torch.convolution(x, weight, bias, *args)
    finally:
        cudnn.allow_tf32 = before
    exact = torch.convolution(x.double(), weight.double(), bias.double(), *args)
    worst = float(((got.double() - exact).abs() / (1e-4 + 1e-4 * exact.abs())).max())
    one_worst = float(((one.double() - exact).abs() / (1e-4 + 1e-4 * exact.abs())).max())
    assert worst < 0.2, (worst, one_worst)
    assert got.dtype == torch.float32 and got.shape == exact.shape


@pytest.mark.gpu
@needs_cuda
def test_one_tf32_pass_is_pytorchs_default_convolution_and_leaves_the_flags_as_they_were() -> None:
    torch.manual_seed(0)
    x, w = torch.randn(8, 64, 32, 32, device="cuda"), torch.randn(32, 64, 3, 3, device="cuda")
    args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    namespace = _helper_namespace(torch, "tf32")
    cudnn = torch.backends.cudnn
    before = cudnn.allow_tf32
    try:
        cudnn.allow_tf32 = False  # the harness's setting for candidates
        got = namespace["_library_convolution"](x, w, None, *args)
        assert cudnn.allow_tf32 is False
        exact = torch.convolution(x, w, None, *args)
    finally:
        cudnn.allow_tf32 = before
    truth = torch.convolution(x.double(), w.double(), None, *args)
    # TF32 keeps 10 mantissa bits of each operand: errors near 1e-3 of the terms, where exact fp32's
    # are near 1e-7; compared with fp64, not with a second TF32 call, whose algorithm cuDNN may pick anew
    tf32_error = float((got.double() - truth).abs().max())
    exact_error = float((exact.double() - truth).abs().max())
    assert tf32_error > 20 * exact_error and tf32_error < 0.05 * float(truth.abs().max())


@pytest.mark.gpu
@needs_cuda
def test_algorithm_timing_keeps_exact_fp32_and_leaves_the_flags_as_they_were() -> None:
    """cudnn.benchmark for these calls only: the algorithm cuDNN times fastest, at the harness's exact fp32,
    also on a second call (the kept choice) and inside a CUDA graph captured after it."""
    torch.manual_seed(0)
    x, w = torch.randn(4, 32, 24, 24, 24, device="cuda"), torch.randn(16, 32, 3, 3, 3, device="cuda")
    args = ([1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1)
    namespace = _helper_namespace(torch, "ieee", benchmark=True)
    cudnn = torch.backends.cudnn
    before = (cudnn.allow_tf32, cudnn.benchmark)
    try:
        cudnn.allow_tf32, cudnn.benchmark = False, False  # the harness's setting for candidates
        first = namespace["_library_convolution"](x, w, None, *args)
        second = namespace["_library_convolution"](x, w, None, *args)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = namespace["_library_convolution"](x, w, None, *args)
        graph.replay()
        assert (cudnn.allow_tf32, cudnn.benchmark) == (False, False)
    finally:
        cudnn.allow_tf32, cudnn.benchmark = before
    truth = torch.convolution(x.double(), w.double(), None, *args)
    for got in (first, second, captured):
        torch.testing.assert_close(got.double(), truth, atol=1e-4, rtol=1e-4)


def _fused_split(module: Any, t: torch.Tensor, groups: int, channel_dim: int, lo_first: bool) -> Any:
    """hi and the pair from the fused kernel, allocated as the convolution's wrapper allocates them."""
    shape = list(t.shape)
    shape[channel_dim] *= 2
    layout = module._ke_memory_format(t)
    hi = torch.empty_like(t)
    pair = torch.empty(shape, dtype=torch.bfloat16, device=t.device, memory_format=layout)
    assert module._ke_split_into(t, hi, pair, groups, channel_dim, lo_first)
    return hi, pair


def _fused_split_module(tmp_path: Path) -> Any:
    """The rendered split helpers with Triton's kernel, imported from a file (Triton reads its source)."""
    from tests.source_module import load_source

    header = "import torch\nimport triton\nimport triton.language as tl\n"
    source = "\n".join(
        [
            header,
            *LIBRARY_CONV_TUNABLES,
            TF32_SPLIT_SOURCE,
            TF32_SPLIT_KERNEL_SOURCE,
            LIBRARY_CONV_SOURCE,
        ]
    )
    return load_source(source, tmp_path, "fused_split_candidate")


@pytest.mark.parametrize(
    ("shape", "memory_format", "groups", "channel_dim", "lo_first"),
    [
        ((2, 6, 5, 3), torch.contiguous_format, 1, 1, False),  # an input
        ((2, 6, 5, 3), torch.contiguous_format, 3, 1, False),  # grouped
        ((2, 6, 5, 3), torch.channels_last, 2, 1, False),  # Inductor's layout
        ((2, 4, 3, 2, 5), torch.channels_last_3d, 1, 1, False),
        ((8, 3, 3, 3), torch.contiguous_format, 1, 1, True),  # a convolution's weight
        ((8, 3, 3, 3), torch.channels_last, 1, 1, True),
        ((6, 4, 3, 3), torch.contiguous_format, 2, 0, True),  # a transposed convolution's weight
        ((1, 5, 1, 7), torch.contiguous_format, 1, 1, False),  # size-1 dims
    ],
)
def test_the_fused_split_kernel_writes_what_pytorchs_ops_write_bit_for_bit(
    interpreter: None,
    tmp_path: Path,
    shape: tuple[int, ...],
    memory_format: torch.memory_format,
    groups: int,
    channel_dim: int,
    lo_first: bool,
) -> None:
    module = _fused_split_module(tmp_path)
    torch.manual_seed(0)
    t = (torch.randn(shape) * 1e3).contiguous(memory_format=memory_format)
    specials = [0.0, -0.0, 1e-30, float("inf"), float("nan"), 3.4e38]
    for position, value in zip(itertools.product(*map(range, shape)), specials, strict=False):
        t[position] = value
    layout = module._ke_memory_format(t)
    hi, pair = _fused_split(module, t, groups, channel_dim, lo_first)
    want_hi = module._ke_tf32_hi(t)
    want_pair = module._ke_bf16_pair(t, want_hi, groups, channel_dim, layout, lo_first)
    assert torch.equal(hi.view(torch.int32), want_hi.view(torch.int32)) and hi.stride() == t.stride()
    # NaN's bits differ by platform (PyTorch's CPU conversion keeps the sign, CUDA's does not): NaN alike
    nan = want_pair.isnan()
    assert torch.equal(pair.isnan(), nan) and pair.stride() == want_pair.stride()
    assert torch.equal(pair.view(torch.int16)[~nan], want_pair.view(torch.int16)[~nan])


TRIPLE_CASES = [  # (shape, memory format, groups, channel dim, the lo part's place)
    ((2, 6, 5, 3), torch.contiguous_format, 1, 1, 1),  # an input
    ((2, 6, 5, 3), torch.contiguous_format, 3, 1, 1),  # grouped
    ((2, 6, 5, 3), torch.channels_last, 2, 1, 1),  # Inductor's layout
    ((2, 4, 3, 2, 5), torch.channels_last_3d, 1, 1, 1),
    ((8, 3, 3, 3), torch.contiguous_format, 1, 1, 2),  # a convolution's weight
    ((8, 3, 3, 3), torch.channels_last, 1, 1, 2),
    ((6, 4, 3, 3), torch.contiguous_format, 2, 0, 2),  # a transposed convolution's weight
    ((1, 5, 1, 7), torch.contiguous_format, 1, 1, 1),  # size-1 dims
]


def _triples(module: Any, t: torch.Tensor, groups: int, channel_dim: int, lo_at: int) -> Any:
    """(the fused kernel's triple, PyTorch's ops' triple) of t."""
    shape = list(t.shape)
    shape[channel_dim] *= 3
    got = torch.empty(shape, device=t.device, memory_format=module._ke_memory_format(t))
    assert module._ke_split_triple_into(t, got, groups, channel_dim, lo_at)
    module_torch_ops = module._ke_split_triple_into
    try:
        module._ke_split_triple_into = lambda *args: False
        want = module._ke_tf32_triple(t, groups, channel_dim, lo_at)
    finally:
        module._ke_split_triple_into = module_torch_ops
    return got, want


@pytest.mark.parametrize(("shape", "memory_format", "groups", "channel_dim", "lo_at"), TRIPLE_CASES)
def test_the_fused_triple_split_writes_what_pytorchs_ops_write_bit_for_bit(
    interpreter: None,
    tmp_path: Path,
    shape: tuple[int, ...],
    memory_format: torch.memory_format,
    groups: int,
    channel_dim: int,
    lo_at: int,
) -> None:
    module = _fused_split_module(tmp_path)
    torch.manual_seed(0)
    t = (torch.randn(shape) * 1e3).contiguous(memory_format=memory_format)
    for position, value in zip(
        itertools.product(*map(range, shape)), [0.0, -0.0, 1e-30, 3.4e38], strict=False
    ):
        t[position] = value
    got, want = _triples(module, t, groups, channel_dim, lo_at)
    assert got.stride() == want.stride()
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))
    # the parts: hi everywhere but lo_at, and hi + lo is t, within each group
    per_group = shape[channel_dim] // groups
    parts = got.unflatten(channel_dim, (groups, 3, per_group)).unbind(channel_dim + 1)
    grouped = t.unflatten(channel_dim, (groups, per_group))
    hi = next(part for index, part in enumerate(parts) if index != lo_at)
    assert torch.equal(hi + parts[lo_at], grouped)
    assert torch.equal(hi.view(torch.int32) & 8191, torch.zeros_like(hi, dtype=torch.int32))


def test_the_fused_split_takes_pytorchs_ops_for_a_tensor_with_gaps(interpreter: None, tmp_path: Path) -> None:
    module = _fused_split_module(tmp_path)
    t = torch.randn(2, 4, 6, 6)[:, :, :, ::2]  # every other column: strides with gaps
    hi, pair = torch.empty_like(t), torch.empty(2, 8, 6, 3, dtype=torch.bfloat16)
    assert not module._ke_split_into(t, hi, pair, 1, 1, False)  # hi's strides are not t's


@pytest.mark.gpu
@needs_cuda
def test_the_fused_split_kernel_matches_pytorchs_ops_on_a_gpu(tmp_path: Path) -> None:
    """Compiled for the GPU: L2/1-like operands in both layouts, and a transposed convolution's weight."""
    module = _fused_split_module(tmp_path)
    torch.manual_seed(0)
    cases = [
        (
            torch.randn(8, 64, 33, 31, device="cuda").contiguous(memory_format=torch.channels_last),
            1,
            1,
            False,
        ),
        (torch.randn(8, 64, 33, 31, device="cuda"), 4, 1, False),
        (torch.randn(128, 64, 3, 3, device="cuda"), 1, 1, True),
        (torch.randn(64, 32, 4, 4, device="cuda"), 2, 0, True),
    ]
    for t, groups, channel_dim, lo_first in cases:
        layout = module._ke_memory_format(t)
        hi, pair = _fused_split(module, t, groups, channel_dim, lo_first)
        want_hi = module._ke_tf32_hi(t)
        want_pair = module._ke_bf16_pair(t, want_hi, groups, channel_dim, layout, lo_first)
        assert torch.equal(hi.view(torch.int32), want_hi.view(torch.int32))
        assert torch.equal(pair.view(torch.int16), want_pair.view(torch.int16))
        assert pair.stride() == want_pair.stride()


@pytest.mark.gpu
@needs_cuda
def test_the_fused_triple_split_matches_pytorchs_ops_on_a_gpu(tmp_path: Path) -> None:
    module = _fused_split_module(tmp_path)
    torch.manual_seed(0)
    for shape, memory_format, groups, channel_dim, lo_at in [
        ((8, 64, 33, 31), torch.channels_last, 1, 1, 1),
        ((8, 64, 33, 31), torch.contiguous_format, 4, 1, 1),
        ((128, 64, 3, 3), torch.contiguous_format, 1, 1, 2),
        ((64, 32, 4, 4), torch.contiguous_format, 2, 0, 2),
    ]:
        t = torch.randn(shape, device="cuda").contiguous(memory_format=memory_format)
        got, want = _triples(module, t, groups, channel_dim, lo_at)
        assert got.stride() == want.stride() and torch.equal(got.view(torch.int32), want.view(torch.int32))


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("case", range(len(SPLIT_CASES)))
def test_one_tf32_pass_over_tripled_channels_on_cudnn_meets_the_tolerance(case: int, tmp_path: Path) -> None:
    """With the fused triple split, on cuDNN, each convolution kind; the flags left as they were."""
    module = _fused_split_module(tmp_path)
    module.LIBRARY_CONV_FP32_PRECISION = "tf32x3_one_pass"
    x, weight, bias, args, layout = _split_case(case, "cuda")
    cudnn = torch.backends.cudnn
    before = cudnn.allow_tf32
    try:
        cudnn.allow_tf32 = False  # the harness's setting for candidates
        got = module._library_convolution(x, weight, bias, *args)
        assert cudnn.allow_tf32 is False
    finally:
        cudnn.allow_tf32 = before
    exact = torch.convolution(x.double(), weight.double(), bias.double(), *args)
    worst = float(((got.double() - exact).abs() / (1e-4 + 1e-4 * exact.abs())).max())
    assert worst < 0.2, worst
    assert got.dtype == torch.float32 and got.is_contiguous(memory_format=layout or torch.contiguous_format)
