"""fp32 convolution precision: candidates and the reference exact, baselines at PyTorch's default."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from kernelevolve.eval import baseline_timing, harness, stages
from kernelevolve.platforms import Platform
from kernelevolve.specs import precision
from kernelevolve.types import Baseline, Candidate, EvalRequest, EvalSettings, KernelSpec, Status
from tests.numerics_specs import CANCELLING, ELEMENTWISE


def test_precision_blocks_set_and_restore_cudnn_tf32() -> None:
    before = torch.backends.cudnn.allow_tf32
    with precision.exact_fp32():
        assert torch.backends.cudnn.allow_tf32 is False
        with precision.baseline_precision():
            assert torch.backends.cudnn.allow_tf32 is precision.PYTORCH_DEFAULT_CUDNN_TF32
        assert torch.backends.cudnn.allow_tf32 is False
    assert torch.backends.cudnn.allow_tf32 is before


def test_candidates_run_exact_and_baselines_at_the_default(
    add_kernel: Callable[..., str],
    add_spec: KernelSpec,
    cpu_platform: Platform,
    fast_settings: EvalSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    timed: dict[str, bool] = {}  # model class timed -> cuDNN TF32 allowed while it ran
    real_time = baseline_timing._time

    def spy(fn: Any, *args: Any, **kwargs: Any) -> Any:
        timed[type(fn).__name__] = torch.backends.cudnn.allow_tf32
        return real_time(fn, *args, **kwargs)

    monkeypatch.setattr(baseline_timing, "_time", spy)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    baseline_timing.measure_baselines(add_spec, cpu_platform, fast_settings)
    assert timed == {"Model": precision.PYTORCH_DEFAULT_CUDNN_TF32}
    # The candidate runs in its runner: a forward that refuses TF32 convolutions passes only at exact fp32.
    refusing = add_kernel(
        prologue='if torch.backends.cudnn.allow_tf32:\n    raise RuntimeError("TF32 allowed")'
    )
    request = EvalRequest(Candidate(refusing, "triton", "t"), add_spec, cpu_platform.name, fast_settings)
    report = harness.evaluate(request, cpu_platform)
    assert report.status is Status.OK, report.feedback


def test_kernelbench_protocol_runs_reference_and_candidate_at_the_frameworks_defaults(
    add_kernel: Callable[..., str],
    add_spec: KernelSpec,
    cpu_platform: Platform,
    fast_settings: EvalSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    from kernelevolve.bench.kernelbench.problems import Problem, problem_to_spec

    assert problem_to_spec(Problem(1, 1, "p", "code")).reference_precision == precision.FRAMEWORK_DEFAULT
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    default = dataclasses.replace(add_spec, reference_precision=precision.FRAMEWORK_DEFAULT)
    assert default.key != add_spec.key
    # a forward that demands TF32 convolutions allowed passes only at the framework's defaults
    demanding = add_kernel(
        prologue='if not torch.backends.cudnn.allow_tf32:\n    raise RuntimeError("TF32 refused")'
    )
    for spec, ok in ((default, True), (add_spec, False)):
        request = EvalRequest(Candidate(demanding, "triton", "t"), spec, cpu_platform.name, fast_settings)
        report = harness.evaluate(request, cpu_platform)
        assert (report.status is Status.OK) is ok, report.feedback
    with pytest.raises(ValueError, match="unknown reference precision"):
        precision.reference_precision("tf32_everywhere")


def test_only_gpu_convolutions_get_an_eager_timing_at_the_candidates_precision(
    add_spec: KernelSpec,
    cpu_platform: Platform,
    fast_settings: EvalSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    convolution = torch.nn.Sequential(torch.nn.Conv2d(2, 2, 3), torch.nn.ReLU())
    assert precision.precision_differs(convolution, "cuda:0")
    assert not precision.precision_differs(convolution, "cpu")
    assert not precision.precision_differs(torch.nn.Linear(2, 2), "cuda:0")

    plain = baseline_timing.measure_baselines(add_spec, cpu_platform, fast_settings)
    assert all(b.eager_exact is None for b in plain.values())
    # Where precision differs, eager is timed a second time, with cuDNN's TF32 off.
    timed_tf32: list[bool] = []
    real_time = baseline_timing._time

    def spy(fn: Any, *args: Any, **kwargs: Any) -> Any:
        timed_tf32.append(torch.backends.cudnn.allow_tf32)
        return real_time(fn, *args, **kwargs)

    monkeypatch.setattr(baseline_timing, "_time", spy)
    monkeypatch.setattr(precision, "precision_differs", lambda model, device: True)
    both = baseline_timing.measure_baselines(add_spec, cpu_platform, fast_settings)
    assert all(b.eager_exact is not None and b.eager_exact.median_ms > 0 for b in both.values())
    assert timed_tf32 == [precision.PYTORCH_DEFAULT_CUDNN_TF32, False] * len(add_spec.shapes)
    shape = next(iter(both))
    assert Baseline.from_json(both[shape].to_json()) == both[shape]
    assert Baseline.from_json({**both[shape].to_json(), "eager_exact": None}).eager_exact is None


def test_baselines_record_whether_their_own_output_meets_the_tolerance(cpu_platform: Platform) -> None:
    """torch.compile reorders a sum that cancels (as L2/14's does) beyond 1e-4: its timing is then that of an
    output a candidate would be rejected for, and the baseline says so."""
    settings = EvalSettings(timing_trials=3, warmup_trials=1, measure_compile_baseline=True)
    (cancelling,) = baseline_timing.measure_baselines(CANCELLING, cpu_platform, settings).values()
    assert cancelling.eager_within_tolerance is True and cancelling.eager_max_error == 0.0
    assert cancelling.compiled_within_tolerance is False
    assert cancelling.compiled_max_error is not None and cancelling.compiled_max_error > 1e-3
    (elementwise,) = baseline_timing.measure_baselines(ELEMENTWISE, cpu_platform, settings).values()
    assert elementwise.eager_within_tolerance is True and elementwise.compiled_within_tolerance is True
    assert Baseline.from_json(cancelling.to_json()) == cancelling
    older = {k: v for k, v in cancelling.to_json().items() if "tolerance" not in k and "max_error" not in k}
    assert Baseline.from_json(older).compiled_within_tolerance is None  # records from before: unknown


def test_a_compile_baseline_missing_the_tolerance_is_compiled_again_at_the_candidates_precision(
    cpu_platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where torch.compile's output misses the tolerance and the precision differs (GPU convolutions, made
    to differ here), it is compiled and timed again at the candidates' precision, with its accuracy; where
    its output meets the tolerance, or the precision does not differ, it is not."""
    settings = EvalSettings(timing_trials=3, warmup_trials=1, measure_compile_baseline=True)
    (cancelling,) = baseline_timing.measure_baselines(CANCELLING, cpu_platform, settings).values()
    assert cancelling.compiled_within_tolerance is False and cancelling.compiled_exact is None  # CPU: same

    tf32_while_compiled: list[bool] = []
    real_compile = baseline_timing.compile_before_running

    def spy(*args: Any, **kwargs: Any) -> Any:
        tf32_while_compiled.append(torch.backends.cudnn.allow_tf32)
        return real_compile(*args, **kwargs)

    monkeypatch.setattr(baseline_timing, "compile_before_running", spy)
    monkeypatch.setattr(precision, "precision_differs", lambda model, device: True)
    (cancelling,) = baseline_timing.measure_baselines(CANCELLING, cpu_platform, settings).values()
    assert cancelling.compiled_exact is not None and cancelling.compiled_exact.median_ms > 0
    assert cancelling.compiled_exact_within_tolerance is False  # the sum is reordered at any precision
    assert tf32_while_compiled == [precision.PYTORCH_DEFAULT_CUDNN_TF32, False]
    assert Baseline.from_json(cancelling.to_json()) == cancelling
    (elementwise,) = baseline_timing.measure_baselines(ELEMENTWISE, cpu_platform, settings).values()
    assert elementwise.compiled_within_tolerance is True and elementwise.compiled_exact is None


RANDOM_IN_FORWARD = KernelSpec(
    name="random_in_forward",
    reference_source=(
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return x + torch.randn_like(x)\n\ndef get_inputs():\n    return [torch.rand(64)]\n\n"
        "def get_init_inputs():\n    return []\n"
    ),
)


def test_a_reference_drawing_in_forward_meets_its_own_tolerance(cpu_platform: Platform) -> None:
    """Eager against the reference: both forwards draw from the generator seeded alike (as candidates'
    correctness does), so a reference with random draws in forward (L3/35) is not reported as missing."""
    settings = EvalSettings(timing_trials=2, warmup_trials=1, measure_compile_baseline=False)
    (baseline,) = baseline_timing.measure_baselines(RANDOM_IN_FORWARD, cpu_platform, settings).values()
    assert baseline.eager_within_tolerance is True and baseline.eager_max_error == 0.0


CONVOLUTION = KernelSpec(
    name="convolution",
    reference_source=(
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.conv = nn.Conv2d(64, 64, 3, padding=1)\n\n"
        "    def forward(self, x):\n        return torch.relu(self.conv(x))\n\n"
        "def get_inputs():\n    return [torch.rand(8, 64, 56, 56)]\n\ndef get_init_inputs():\n    return []\n"
    ),
)


@pytest.mark.gpu
def test_on_the_gpu_a_convolutions_compile_baseline_gets_its_exact_fp32_timing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cuDNN convolution whose default torch.compile output is taken to miss the tolerance: torch.compile
    is compiled and timed again with TF32 off, and that output meets the tolerance."""
    from kernelevolve.platforms import load_platform
    from tests.gpu import gpu_platform_name

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    real_of = baseline_timing._BaselineAccuracy.of

    def default_compile_misses(self: Any, model: Any, label: str) -> tuple[bool | None, float | None]:
        return (False, 1.0) if label == "torch.compile" else real_of(self, model, label)

    monkeypatch.setattr(baseline_timing._BaselineAccuracy, "of", default_compile_misses)
    settings = EvalSettings(timing_trials=20, warmup_trials=3, measure_compile_baseline=True)
    (baseline,) = baseline_timing.measure_baselines(
        CONVOLUTION, load_platform(gpu_platform_name()), settings
    ).values()
    assert baseline.compiled is not None and baseline.compiled_exact is not None
    assert baseline.compiled_exact_within_tolerance is True
    assert baseline.eager_exact is not None
    # exact fp32 is no faster than TF32 for either (a loose bound: both run the same cuDNN convolution)
    assert baseline.compiled_exact.median_ms > 0.8 * baseline.compiled.median_ms


def test_spec_names_its_reference_precision(tmp_path: Any, cpu_platform: Platform) -> None:
    from kernelevolve.specs.loading import SpecError, load_spec_file

    (tmp_path / "ref.py").write_text(ELEMENTWISE.reference_source)
    (tmp_path / "ok.yaml").write_text("name: e\nreference: ref.py\nreference_precision: framework_default\n")
    spec = load_spec_file(tmp_path / "ok.yaml", cpu_platform)
    assert spec.reference_precision == precision.FRAMEWORK_DEFAULT
    assert KernelSpec.from_json(spec.to_json()).reference_precision == precision.FRAMEWORK_DEFAULT
    (tmp_path / "bad.yaml").write_text("name: e\nreference: ref.py\nreference_precision: tf32\n")
    with pytest.raises(SpecError, match="reference_precision"):
        load_spec_file(tmp_path / "bad.yaml", cpu_platform)


def test_under_the_frameworks_defaults_the_exact_fp32_verdict_is_recorded_beside_it(
    add_kernel: Callable[..., str],
    add_spec: KernelSpec,
    cpu_platform: Platform,
    fast_settings: EvalSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the spec checks at PyTorch's defaults and the reference's precision differs there (convolutions
    on a GPU, faked here), each candidate also gets the exact-fp32 verdict as a flag; it decides nothing."""
    import dataclasses

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    default = dataclasses.replace(add_spec, reference_precision=precision.FRAMEWORK_DEFAULT)

    def flags_of(source: str, spec: KernelSpec) -> tuple[Status, tuple[str, ...]]:
        request = EvalRequest(Candidate(source, "triton", "t"), spec, cpu_platform.name, fast_settings)
        report = harness.evaluate(request, cpu_platform)
        return report.status, report.flags

    assert precision.EXACT_FP32_CORRECT not in flags_of(add_kernel(), default)[1]  # the CPU: no difference
    monkeypatch.setattr(precision, "precision_differs", lambda model, device: True)
    assert flags_of(add_kernel(), default) == (Status.OK, (precision.EXACT_FP32_CORRECT,))
    assert precision.EXACT_FP32_CORRECT not in flags_of(add_kernel(), add_spec)[1]  # exact already
    status, flags = flags_of(add_kernel(result="x - y"), default)
    assert status is Status.INCORRECT and precision.EXACT_FP32_INCORRECT in flags

    class Rounded(stages._AtExactFp32):  # exact fp32 gives another answer: a TF32-only kernel
        def __call__(self, *args: Any) -> Any:
            return super().__call__(*args) + 1.0

    monkeypatch.setattr(stages, "_AtExactFp32", Rounded)
    fast_settings = dataclasses.replace(fast_settings, seed=fast_settings.seed + 1)  # no kept outputs
    assert flags_of(add_kernel(), default) == (
        Status.OK,
        (precision.EXACT_FP32_INCORRECT,),
    )


_CONV_THEN_TRITON = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.maximum(tl.load(src + offsets, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 64, 3, padding=1)

    def forward(self, x):
        y = self.conv(x).contiguous()
        out = torch.empty_like(y)
        _relu[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
        return out
"""


@pytest.mark.gpu
def test_on_the_gpu_a_convolution_at_the_frameworks_defaults_gets_its_exact_fp32_verdict_too() -> None:
    """KernelBench's protocol on a cuDNN convolution: the candidate (cuDNN at PyTorch's defaults, then our
    ReLU) is judged against the reference at those defaults, and at exact fp32 beside it."""
    import dataclasses

    from kernelevolve.platforms import load_platform
    from tests.gpu import gpu_platform_name

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    spec = dataclasses.replace(CONVOLUTION, reference_precision=precision.FRAMEWORK_DEFAULT)
    platform = load_platform(gpu_platform_name())
    settings = EvalSettings(timing_trials=10, warmup_trials=2, strict=False)
    request = EvalRequest(Candidate(_CONV_THEN_TRITON, "triton", "t"), spec, platform.name, settings)
    report = harness.evaluate(request, platform, "cuda:0")
    assert report.status is Status.OK, report.feedback
    exact = {precision.EXACT_FP32_CORRECT, precision.EXACT_FP32_INCORRECT} & set(report.flags)
    assert len(exact) == 1, report.flags
