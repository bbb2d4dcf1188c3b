"""torch.compile's baseline compiled with nothing run, then run for the first time without compiling again."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelevolve.eval.compile_baseline import compile_before_running

RUNS = {"count": 0}


@torch.library.custom_op("kernelevolve_test::counted_scale", mutates_args=())
def counted_scale(x: torch.Tensor) -> torch.Tensor:
    """A real computation that counts its runs: Inductor keeps it as a call in the compiled graph."""
    RUNS["count"] += 1
    return x * 3.0


@counted_scale.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(counted_scale(self.linear(x))).sum(dim=-1)


def test_compiles_on_placeholders_running_nothing_then_runs_without_recompiling() -> None:
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    model, x = Net().eval(), torch.randn(4, 16)
    RUNS["count"] = 0
    # "cpu" plays the device here: on a GPU it is "cuda", and the CPU's own ops run as usual
    compiled = compile_before_running(model, [torch.empty(4, 16)], "cpu", device_types=("cpu",))
    assert RUNS["count"] == 0  # compiled, nothing run
    with torch.no_grad():
        first = compiled(x)
        again = compiled(x)
    assert RUNS["count"] == 2  # the compiled graph's own call of the op, once per real call
    with torch.no_grad():
        assert torch.allclose(first, model(x), atol=1e-6) and torch.equal(first, again)
    assert counters["stats"]["unique_graphs"] == 1  # the real calls compiled nothing more
    torch._dynamo.reset()


def test_compile_time_benchmarks_hold_the_device_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inductor's benchmarks while compiling (pad_mm) run real kernels: they take the lock for their time."""
    from torch._inductor.runtime import benchmarking

    from kernelevolve.eval import compile_baseline, device_lock

    held: list[str] = []

    @contextlib.contextmanager
    def hold(device: str) -> Iterator[float]:
        held.append(device)
        yield 0.0

    monkeypatch.setattr(device_lock, "hold_device", hold)
    monkeypatch.setattr(benchmarking.benchmarker, "benchmark_gpu", lambda fn, **kwargs: 1.5)
    with compile_baseline._compile_time_benchmarks_locked("cuda:1"):
        assert benchmarking.benchmarker.benchmark_gpu(lambda: None, warmup=5) == 1.5
    assert held == ["cuda:1"]
    assert benchmarking.benchmarker.benchmark_gpu(lambda: None) == 1.5 and held == ["cuda:1"]  # as before
    with compile_baseline._compile_time_benchmarks_locked("cpu"):  # no GPU: nothing to lock
        benchmarking.benchmarker.benchmark_gpu(lambda: None)
    assert held == ["cuda:1"]


@pytest.mark.gpu
def test_on_the_gpu_the_compile_runs_no_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from torch.profiler import ProfilerActivity, profile

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))  # a cold cache, as a sweep's first compile
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(inductor_config, "fx_graph_cache", False)
    torch._dynamo.reset()
    model = (
        torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)).cuda().eval()
    )
    x = torch.randn(2, 3, 16, 16, device="cuda")
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as trace:
        compile_before_running(model, [torch.empty_like(x)], "cuda:0")
        torch.cuda.synchronize()
    torch._dynamo.reset()
    device_events = [e for e in trace.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    # On a cold cache Inductor's joint-graph pattern passes move their example tensors to the device: 24
    # host-to-device and 24 device-to-device copies, 35 us in all on an H200 (session 14's
    # compile_events.py), nothing a neighbour's timing could feel. Kernels are what must not run.
    assert [e.name for e in device_events if not e.name.startswith("Memcpy")] == []
    assert sum(e.time_range.elapsed_us() for e in device_events) < 1000


@pytest.mark.gpu
def test_on_the_gpu_the_first_call_after_compiling_matches_eager() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    torch._dynamo.reset()
    model = (
        torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)).cuda().eval()
    )
    x = torch.randn(2, 3, 16, 16, device="cuda")
    # exact fp32 throughout: cuDNN's default TF32 would make the two differ by its rounding, not by a wrong call
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        compiled = compile_before_running(model, [torch.empty_like(x)], "cuda:0")
        with torch.no_grad():
            assert torch.allclose(compiled(x), model(x), atol=1e-4, rtol=1e-4)
    torch._dynamo.reset()


@pytest.mark.gpu
def test_on_the_gpu_it_times_as_torch_compile_does() -> None:
    """The baseline must stay torch.compile's: the two-phase compile times like a plain torch.compile."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelevolve.eval import timers

    def block() -> torch.nn.Module:
        torch.manual_seed(0)
        layers = [torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.GELU()]
        return torch.nn.Sequential(*layers * 4).cuda().eval()

    x = torch.randn(8, 16, 64, 64, device="cuda")
    makers = (
        lambda m: torch.compile(m),
        lambda m: compile_before_running(m, [torch.empty_like(x)], "cuda:0"),
    )
    # Medians of this 0.3 ms program moved by up to 20% between back-to-back runs on an H200 (session 14's
    # order_probe.py), either way: the best of three alternating runs each compares the programs.
    medians: list[list[float]] = [[], []]
    for _ in range(3):
        for which, make in enumerate(makers):
            torch._dynamo.reset()
            model = make(block())
            with torch.no_grad():
                model(x)
            stats = timers.time_callable(
                model, [[x]], "cuda:0", trials=50, warmup=5, flush_l2=True, l2_bytes=60 << 20
            )
            medians[which].append(stats.median_ms)
    torch._dynamo.reset()
    assert 0.9 < min(medians[1]) / min(medians[0]) < 1.1, medians


def _baselines_where_compiling_fails(
    monkeypatch: pytest.MonkeyPatch, spec: Any, platform: Any, message: str, first_call_too: bool
) -> Any:
    """The spec's baselines with compiling on placeholders failing, and with `first_call_too` the
    fallback's plain torch.compile as well."""
    from kernelevolve.eval import baseline_timing
    from kernelevolve.types import EvalSettings

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(message)

    monkeypatch.setattr(baseline_timing, "compile_before_running", fails)
    if first_call_too:
        monkeypatch.setattr(torch, "compile", fails)
    settings = EvalSettings(timing_trials=3, warmup_trials=1, measure_compile_baseline=True)
    return baseline_timing.measure_baselines(spec, platform, settings)


def test_baseline_compiles_on_its_first_call_where_compiling_on_placeholders_fails(
    monkeypatch: pytest.MonkeyPatch, add_spec: Any, cpu_platform: Any
) -> None:
    """Faked device work can break a model's Python (L3/32 on the H200): the baseline is still timed."""
    baselines = _baselines_where_compiling_fails(
        monkeypatch, add_spec, cpu_platform, "meta kernel missing", first_call_too=False
    )
    for baseline in baselines.values():
        assert baseline.compile_error == ""
        assert baseline.compiled is not None and baseline.compiled.median_ms > 0
        assert baseline.compiled_within_tolerance is True


def test_a_baseline_that_cannot_compile_records_why(
    monkeypatch: pytest.MonkeyPatch, add_spec: Any, cpu_platform: Any
) -> None:
    from kernelevolve.bench.sweep.run import record_from_results

    baselines = _baselines_where_compiling_fails(
        monkeypatch, add_spec, cpu_platform, "no compiler here", first_call_too=True
    )
    assert all(b.compiled is None and "no compiler here" in b.compile_error for b in baselines.values())
    record = record_from_results({"baselines": {k: b.to_json() for k, b in baselines.items()}})
    assert record["compile_ms"] is None and record["eager_ms"] > 0
    assert record["compile_error"] == "n64: RuntimeError: no compiler here"
