"""Evaluation throughput machinery: per-stage timings, the device lock, compile-before-lock, worker counts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from kernelevolve.eval import device_lock, harness, precompile, timers
from kernelevolve.eval.local import workers_per_device
from kernelevolve.platforms import Platform, load_platform
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, Status, TimingStats


def test_reports_say_where_the_time_went(
    add_kernel: Callable[..., str],
    add_spec: KernelSpec,
    cpu_platform: Platform,
    fast_settings: EvalSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    request = EvalRequest(Candidate(add_kernel(), "triton", "t"), add_spec, cpu_platform.name, fast_settings)
    report = harness.evaluate(request, cpu_platform)
    assert report.status is Status.OK, report.feedback
    assert {"static", "load", "build", "correctness", "timing"} <= set(report.phase_s)
    assert all(v >= 0 for v in report.phase_s.values())
    assert sum(report.phase_s.values()) <= report.wall_s + 1e-3
    assert "precompile" not in report.phase_s and "device_wait" not in report.phase_s  # GPU only
    again = type(report).from_json(report.to_json())
    assert again.phase_s == report.phase_s


def test_device_lock_serialises_holders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(device_lock.LOCK_DIR_ENV, str(tmp_path))
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with device_lock.hold("gpu-test"):
            held.set()
            release.wait(timeout=10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(timeout=10)
    threading.Timer(0.3, release.set).start()
    with device_lock.hold("gpu-test") as waited:
        assert waited >= 0.25  # had to wait for the holder's release
    thread.join(timeout=10)
    with device_lock.hold("gpu-other") as waited:  # another device is independent
        assert waited < 0.25
    assert (tmp_path / "gpu-test.lock").exists()


def test_workers_per_device_defaults() -> None:
    assert workers_per_device(None, load_platform("cpu")) == 1  # CPU timings would interfere
    assert workers_per_device(None, load_platform("h200")) == 2  # compile overlaps the locked runs
    assert workers_per_device(3, load_platform("h200")) == 3


def test_placeholder_inputs_make_shapes_without_values() -> None:
    from kernelevolve.eval.reference import load_reference

    module = load_reference(
        "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x, i):\n"
        "        return x[i]\n"
        "def get_inputs():\n    return [torch.randn(4, 8), torch.randint(0, 4, (3,)), 7]\n"
        "def get_init_inputs():\n    return []\n"
    )
    x, index, scalar = precompile.placeholder_inputs(module, "cpu", torch.float16)
    assert x.shape == (4, 8) and x.dtype == torch.float16 and x.device.type == "cpu"
    assert index.dtype == torch.int64 and index.shape == (3,) and int(index.abs().sum()) == 0
    assert scalar == 7


def test_timing_stats_carry_host_time() -> None:
    stats = TimingStats.from_samples([1.0, 2.0, 3.0], "cuda_event", [0.01, 0.03, 0.02])
    assert stats.median_ms == 2.0 and stats.host_ms == pytest.approx(0.02)
    assert TimingStats.from_json(stats.to_json()) == stats
    assert TimingStats.from_samples([1.0], "wall").host_ms is None


def _needs_cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")


@pytest.mark.gpu
def test_precompile_compiles_without_launching(add_kernel: Callable[..., str], add_spec: KernelSpec) -> None:
    _needs_cuda()
    from kernelevolve.backends.triton import BACKEND
    from kernelevolve.eval.reference import load_reference

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TRITON_INTERPRET", raising=False)
        module = BACKEND.load(add_kernel(alloc="torch.full_like(x, 7.0)"), "kernelevolve_precompile_test")
        reference = load_reference(add_spec.reference_source)
        outputs: list[torch.Tensor] = []
        real_forward = module.ModelNew.forward
        module.ModelNew.forward = lambda self, x, y: outputs.append(real_forward(self, x, y)) or outputs[-1]
        why = precompile.precompile(module.ModelNew, reference, add_spec.shapes, 0, "cuda:0", torch.float32)
        assert why == ""
        assert outputs and all(bool((out == 7.0).all()) for out in outputs)  # no kernel wrote them
        assert module.add_kernel.device_caches[torch.cuda.current_device()][0]  # but kernels were compiled


@pytest.mark.gpu
def test_gpu_evaluation_records_lock_wait_precompile_and_host_time(
    add_kernel: Callable[..., str], add_spec: KernelSpec
) -> None:
    _needs_cuda()
    platform = load_platform("h100")
    settings = EvalSettings(
        correctness_trials=2, timing_trials=20, warmup_trials=2, measure_compile_baseline=False
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TRITON_INTERPRET", raising=False)
        report = harness.evaluate(
            EvalRequest(Candidate(add_kernel(), "triton", "t"), add_spec, "h100", settings), platform
        )
    assert report.status is Status.OK, report.feedback
    assert {"precompile", "device_wait"} <= set(report.phase_s)
    assert all(t.host_ms is not None and t.host_ms > 0 for t in report.latency.values())


@pytest.mark.gpu
def test_launch_cover_hides_host_delay() -> None:
    _needs_cuda()
    x = torch.randn(1 << 20, device="cuda")

    def slow_host(t: torch.Tensor) -> torch.Tensor:
        time.sleep(200e-6)  # host work before the launch, longer than the L2 flush, shorter than the cover
        return t * 2

    common = {"trials": 30, "warmup": 3, "flush_l2": True, "l2_bytes": 50 << 20}
    covered = timers.time_callable(slow_host, [[x]], "cuda:0", launch_cover_us=1000.0, **common)
    bare = timers.time_callable(slow_host, [[x]], "cuda:0", launch_cover_us=0.0, **common)
    assert covered.host_ms is not None and covered.host_ms >= 0.2
    assert covered.median_ms < bare.median_ms  # the host's 200 us no longer lands in the GPU time


def test_cover_follows_the_hosts_issue_time() -> None:
    assert timers.cover_for(100.0, [20.0, 30.0, 25.0]) == 100.0  # fast host: the floor
    assert timers.cover_for(100.0, [130.0, 120.0, 140.0]) == pytest.approx(390.0)  # 3x the median
    assert timers.cover_for(100.0, [5000.0, 6000.0]) == timers.MAX_COVER_US  # really slow: measured
    assert timers.cover_for(0.0, [500.0]) == 0.0  # cover off
    assert timers.cover_for(100.0, []) == 100.0


def test_timing_inputs_seed_like_manual_seed_for_less() -> None:
    """The timing loop seeds once per timed call: only the generators this device uses, same values."""
    from kernelevolve.eval.reference import seed_generators

    seed_generators(123, "cpu")
    ours = torch.randn(8)
    torch.manual_seed(123)
    assert torch.equal(ours, torch.randn(8))
    if torch.cuda.is_available():
        seed_generators(7, "cuda:0")
        ours = torch.randn(8, device="cuda:0")
        torch.manual_seed(7)
        assert torch.equal(ours, torch.randn(8, device="cuda:0"))


def test_precompile_before_the_lock_unless_forward_calls_a_library(
    add_kernel: Callable[..., str], library_kernel: Callable[[], str]
) -> None:
    """Permissive runs still compile own-kernel candidates unlocked; a library call would run on the GPU."""
    own = Candidate(add_kernel(), "triton", "t")
    library = Candidate(library_kernel(), "triton", "t")
    strict, permissive = EvalSettings(strict=True), EvalSettings(strict=False)
    assert harness._precompiles("cuda:0", own, permissive) and harness._precompiles("cuda:0", own, strict)
    assert harness._precompiles("cuda:0", library, strict)  # strict: the static checks reject it anyway
    assert not harness._precompiles("cuda:0", library, permissive)
    assert not harness._precompiles("cpu", own, strict)
