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
from kernelevolve.eval.precompile import FAKED_LIBRARY_WORK, OWN_KERNELS_ONLY, precompile_passes
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
    from kernelevolve.specs.reference import load_reference

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
    from kernelevolve.specs.reference import load_reference

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
def test_precompile_with_library_work_faked_runs_nothing_on_the_gpu(
    library_kernel: Callable[[], str], add_spec: KernelSpec
) -> None:
    """A permissive candidate's cuBLAS call and its own kernel: the kernel compiles, and the profiler
    sees no device kernel at all while the pass runs (so it may run while another child times)."""
    _needs_cuda()
    from torch.profiler import ProfilerActivity, profile

    from kernelevolve.backends.triton import BACKEND
    from kernelevolve.specs.reference import load_reference

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TRITON_INTERPRET", raising=False)
        module = BACKEND.load(library_kernel(), "kernelevolve_precompile_library_test")
        reference = load_reference(add_spec.reference_source)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as trace:
            why = precompile.precompile(
                module.ModelNew, reference, add_spec.shapes, 0, "cuda:0", torch.float32, fake_device_work=True
            )
            torch.cuda.synchronize()
        assert why == ""
        kernels = [e.name for e in trace.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        assert kernels == []
        assert module.add_kernel.device_caches[torch.cuda.current_device()][0]  # compiled all the same


@pytest.mark.gpu
def test_an_own_kernel_candidates_precompile_runs_nothing_on_the_gpu(
    add_kernel: Callable[..., str], add_spec: KernelSpec
) -> None:
    """The harness's pass for an own-kernel candidate whose forward also fills a tensor with PyTorch: the
    fill is faked like a library call, the kernel compiles, and the profiler sees no device kernel."""
    _needs_cuda()
    from torch.profiler import ProfilerActivity, profile

    from kernelevolve.backends.triton import BACKEND
    from kernelevolve.specs.reference import load_reference

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TRITON_INTERPRET", raising=False)
        module = BACKEND.load(add_kernel(alloc="torch.full_like(x, 7.0)"), "kernelevolve_precompile_own_test")
        reference = load_reference(add_spec.reference_source)
        torch.cuda.synchronize()
        from kernelevolve.eval.precompile import precompile as precompile_at_shapes

        with profile(activities=[ProfilerActivity.CUDA]) as trace:
            precompile_passes(
                OWN_KERNELS_ONLY,
                lambda faked: precompile_at_shapes(
                    module.ModelNew,
                    reference,
                    add_spec.shapes,
                    0,
                    "cuda:0",
                    torch.float32,
                    fake_device_work=faked,
                ),
            )
            torch.cuda.synchronize()
        kernels = [e.name for e in trace.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        assert kernels == []
        assert module.add_kernel.device_caches[torch.cuda.current_device()][0]  # compiled all the same


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
    from kernelevolve.specs.reference import seed_generators

    seed_generators(123, "cpu")
    ours = torch.randn(8)
    torch.manual_seed(123)
    assert torch.equal(ours, torch.randn(8))
    if torch.cuda.is_available():
        seed_generators(7, "cuda:0")
        ours = torch.randn(8, device="cuda:0")
        torch.manual_seed(7)
        assert torch.equal(ours, torch.randn(8, device="cuda:0"))


def test_precompile_before_the_lock_with_library_work_faked(
    add_kernel: Callable[..., str], library_kernel: Callable[[], str]
) -> None:
    """Own-kernel candidates compile unlocked as they are; a library call would run on the GPU unlocked,
    so candidates keeping one compile with PyTorch's device work faked, and CUDA-graph ones not at all."""
    own = Candidate(add_kernel(), "triton", "t")
    library = Candidate(library_kernel(), "triton", "t")
    strict, permissive = EvalSettings(strict=True), EvalSettings(strict=False)
    mode = harness._precompile_mode
    assert mode("cuda:0", own, permissive) == mode("cuda:0", own, strict) == OWN_KERNELS_ONLY
    assert mode("cuda:0", library, strict) == OWN_KERNELS_ONLY  # strict: the static checks reject it
    assert mode("cuda:0", library, permissive) == FAKED_LIBRARY_WORK
    graphed = Candidate(library_kernel() + "\n# replayed with torch.cuda.graph\n", "triton", "t")
    assert mode("cuda:0", graphed, permissive) is None
    assert mode("cpu", own, strict) is None


@pytest.mark.parametrize(
    ("how", "faked_pass_stops", "passes"),
    [
        (OWN_KERNELS_ONLY, "", [True]),
        (OWN_KERNELS_ONLY, "RuntimeError: .item() of a faked tensor", [True, False]),
        (FAKED_LIBRARY_WORK, "RuntimeError: .item() of a faked tensor", [True]),
    ],
)
def test_precompile_fakes_device_work_first_and_only_own_kernels_get_a_real_pass(
    monkeypatch: pytest.MonkeyPatch, how: str, faked_pass_stops: str, passes: list[bool]
) -> None:
    """Every precompile pass starts with PyTorch's device work faked; an own-kernel candidate whose faked
    pass stopped early gets a real one for what it missed, a library-calling one never does."""
    seen: list[bool] = []

    def fake_precompile(*args: object, fake_device_work: bool = False) -> str:
        seen.append(fake_device_work)
        return faked_pass_stops if fake_device_work else ""

    precompile_passes(how, lambda faked: fake_precompile(fake_device_work=faked))
    assert seen == passes


def test_faked_device_work_runs_nothing_and_keeps_shapes_views_and_aliases() -> None:
    """Under `device_work_faked` (here for CPU tensors, as it runs for GPU ones in a precompile pass): a
    convolution, a GEMM, factories and in-place ops give results of the right shapes without computing;
    an in-place or out= op returns the very tensor it would write, untouched; views stay views."""
    from kernelevolve.eval.precompile import device_work_faked

    x, weight, acc = torch.zeros(2, 3, 8, 8), torch.ones(4, 3, 3, 3), torch.zeros(2, 4, 6, 6)
    out = torch.zeros(4, 5)
    with device_work_faked(("cpu",)), torch.no_grad():
        conv = torch.nn.functional.conv2d(x, weight, stride=1)
        added = acc.add_(1.0)
        flat = x.view(2, -1)
        product = torch.mm(flat.t()[:4], torch.zeros(2, 5), out=out)
        full = torch.full((3, 2), 7.0, device="cpu")
        pooled = torch.nn.functional.max_pool2d(conv, 2)
        values, indices = torch.max(conv, dim=1)  # a tuple
        listed = torch._foreach_add([x, acc], 1.0)  # a list
    assert conv.shape == (2, 4, 6, 6) and pooled.shape == (2, 4, 3, 3) and full.shape == (3, 2)
    assert values.shape == indices.shape == (2, 6, 6) and indices.dtype == torch.int64
    assert [t.shape for t in listed] == [x.shape, acc.shape]
    with device_work_faked(("cpu",)):
        moved = x.to("meta")  # a copy to another device: faked, and on the device it names
    assert moved.device.type == "meta" and moved.shape == x.shape
    assert added is acc and not bool(acc.any())  # the write was not done
    assert product is out and not bool(out.any())
    assert flat.data_ptr() == x.data_ptr()
    with device_work_faked(("cuda",)):  # CPU tensors are not the device's: they run as usual
        assert bool((torch.zeros(2) + 1).eq(1).all())
