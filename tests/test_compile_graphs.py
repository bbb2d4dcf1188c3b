"""torch.compile with CUDA graphs as an extra baseline where its default time is host-bound.

A CUDA-graph replay of our own (graph_replay) wins host-bound networks by removing launch overhead;
torch.compile's mode="reduce-overhead" removes it too. The harness times that mode where the default
torch.compile's time was host-bound on a GPU, records carry it, the quiet pass keeps its faster
measurement and the summary compares against torch.compile at its faster mode, apart from the headline.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from kernelevolve.bench.sweep.run import record_from_results
from kernelevolve.bench.sweep.summary import summarize
from kernelevolve.bench.sweep.summary_markdown import summary_markdown
from kernelevolve.types import Baseline, EvalSettings, KernelSpec, TimingStats

torch = pytest.importorskip("torch")

from kernelevolve.eval import baseline_timing  # noqa: E402
from kernelevolve.platforms import Platform  # noqa: E402


def _timing(median_ms: float, host_ms: float | None) -> TimingStats:
    return TimingStats(median_ms, median_ms, 0.0, median_ms, median_ms, 100, "cuda_event", host_ms)


def test_a_timing_is_host_bound_when_issuing_a_call_takes_half_its_gpu_time() -> None:
    assert _timing(1.0, 0.5).host_bound and _timing(1.0, 2.0).host_bound
    assert not _timing(1.0, 0.49).host_bound and not _timing(1.0, None).host_bound


def test_graphs_are_timed_only_for_a_host_bound_default_on_a_gpu() -> None:
    assert baseline_timing._graphs_worth_timing(_timing(1.0, 0.8), "cuda:0")
    assert not baseline_timing._graphs_worth_timing(_timing(1.0, 0.1), "cuda:0")  # the kernels set its time
    assert not baseline_timing._graphs_worth_timing(_timing(1.0, 0.8), "cpu")
    assert not baseline_timing._graphs_worth_timing(None, "cuda:0")  # torch.compile failed


ELEMENTWISE = KernelSpec(
    name="elementwise",
    reference_source=(
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(x) * 2.0\n\ndef get_inputs():\n    return [torch.rand(64)]\n\n"
        "def get_init_inputs():\n    return []\n"
    ),
)


def test_the_graphs_baseline_is_compiled_with_inductors_cuda_graphs_and_timed(
    cpu_platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made to apply on the CPU (where Inductor skips the graphs): a compile of its own, with the flag
    mode="reduce-overhead" sets, timed like the default one; JSON keeps it."""
    seen: list[bool] = []
    real_compile = baseline_timing.compile_before_running

    def spy(*args: Any, cuda_graphs: bool = False, **kwargs: Any) -> Any:
        seen.append(cuda_graphs)
        return real_compile(*args, cuda_graphs=cuda_graphs, **kwargs)

    monkeypatch.setattr(baseline_timing, "compile_before_running", spy)
    settings = EvalSettings(timing_trials=3, warmup_trials=1, measure_compile_baseline=True)
    (plain,) = baseline_timing.measure_baselines(ELEMENTWISE, cpu_platform, settings).values()
    assert plain.compiled is not None and plain.compiled_graphs is None and seen == [False]

    monkeypatch.setattr(baseline_timing, "_graphs_worth_timing", lambda compiled, device: True)
    (graphed,) = baseline_timing.measure_baselines(ELEMENTWISE, cpu_platform, settings).values()
    assert graphed.compiled_graphs is not None and graphed.compiled_graphs.median_ms > 0
    assert seen == [False, False, True]
    assert Baseline.from_json(graphed.to_json()) == graphed


def test_a_graphs_baseline_that_fails_loses_only_itself(
    cpu_platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_compile = baseline_timing.compile_before_running

    def capture_fails(*args: Any, cuda_graphs: bool = False, **kwargs: Any) -> Any:
        if cuda_graphs:
            raise RuntimeError("operation not permitted when stream is capturing")
        return real_compile(*args, **kwargs)

    real_torch_compile = torch.compile

    def plain_compile_capture_fails(*args: Any, options: Any = None, **kwargs: Any) -> Any:
        # the fallback (compiling on the first call) captures graphs too, and fails alike
        if options and options.get("triton.cudagraphs"):
            raise RuntimeError("operation not permitted when stream is capturing")
        return real_torch_compile(*args, options=options, **kwargs)

    monkeypatch.setattr(baseline_timing, "compile_before_running", capture_fails)
    monkeypatch.setattr(torch, "compile", plain_compile_capture_fails)
    monkeypatch.setattr(baseline_timing, "_graphs_worth_timing", lambda compiled, device: True)
    settings = EvalSettings(timing_trials=3, warmup_trials=1, measure_compile_baseline=True)
    (baseline,) = baseline_timing.measure_baselines(ELEMENTWISE, cpu_platform, settings).values()
    assert baseline.compiled is not None and baseline.compiled_graphs is None


def _problem(key: str, best_ms: float, compile_ms: float, graphs_ms: float | None) -> dict[str, Any]:
    level = int(key[1])
    return {
        "problem": key,
        "level": level,
        "name": key,
        "status": "ok",
        "correct": True,
        "wall_s": 1.0,
        "evaluations": 1,
        "eager_ms": 2 * compile_ms,
        "compile_ms": compile_ms,
        "compile_graphs_ms": graphs_ms,
        "best_ms": best_ms,
        "speedup_vs_eager": 2 * compile_ms / best_ms,
        "speedup_vs_compile": compile_ms / best_ms,
    }


def test_records_and_the_summary_compare_against_torch_compile_at_its_faster_mode() -> None:
    baselines = {
        "a": Baseline(eager=_timing(2.0, 1.5), compiled=_timing(1.2, 1.0), compiled_graphs=_timing(0.5, 0.1)),
        "b": Baseline(eager=_timing(2.0, 1.5), compiled=_timing(1.0, 0.9), compiled_graphs=_timing(0.4, 0.1)),
    }
    record = record_from_results({"baselines": {k: b.to_json() for k, b in baselines.items()}})
    assert record["compile_graphs_ms"] == pytest.approx(0.9)
    partial = {"a": baselines["a"].to_json(), "c": Baseline(eager=_timing(1.0, 0.1)).to_json()}
    assert record_from_results({"baselines": partial})["compile_graphs_ms"] is None  # not at every shape

    records = [
        _problem("L3/20", 0.75, 1.1, 0.6),  # 1.47x the default; 0.8x the graphed one
        _problem("L3/4", 0.66, 0.72, 0.9),  # graphs slower than the default: the default stays
        _problem("L1/1", 1.0, 2.0, None),  # not host-bound: no graphs timing
    ]
    summary = summarize(records)
    groups = summary["vs_compile_with_cuda_graphs"]["strict"]
    assert groups["problems_with_graphs"] == 2 and groups["problems"] == 3
    expected = (0.6 / 0.75 * 0.72 / 0.66 * 2.0) ** (1 / 3)
    assert math.isclose(groups["geomean_speedup_vs_compile"], expected)
    assert math.isclose(
        summary["overall"]["geomean_speedup_vs_compile"], (1.1 / 0.75 * 0.72 / 0.66 * 2) ** (1 / 3)
    )
    text = summary_markdown(summary)
    assert "Against torch.compile at its faster mode" in text and "on the 2 problem(s)" in text
    assert "torch.compile with CUDA graphs" not in summary_markdown(summarize([records[2]]))


HOST_BOUND_CHAIN = KernelSpec(
    name="host_bound_chain",
    reference_source=(
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layers = nn.ModuleList(nn.Linear(32, 32) for _ in range(40))\n\n"
        "    def forward(self, x):\n        for layer in self.layers:\n            x = torch.tanh(layer(x))\n"
        "        return x\n\n"
        "def get_inputs():\n    return [torch.rand(8, 32)]\n\ndef get_init_inputs():\n    return []\n"
    ),
)


@pytest.mark.gpu
def test_on_the_gpu_a_host_bound_compile_baseline_gets_its_cuda_graph_timing() -> None:
    """Forty tiny layers: issuing torch.compile's ~80 launches takes longer than running them, and its
    CUDA-graph mode, recorded in the warm-up calls, replays them in less time."""
    from kernelevolve.platforms import load_platform
    from tests.gpu import gpu_platform_name

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    settings = EvalSettings(timing_trials=30, warmup_trials=5, measure_compile_baseline=True)
    (baseline,) = baseline_timing.measure_baselines(
        HOST_BOUND_CHAIN, load_platform(gpu_platform_name()), settings
    ).values()
    assert baseline.compiled is not None and baseline.compiled.host_bound
    assert baseline.compiled_graphs is not None
    assert baseline.compiled_graphs.median_ms < baseline.compiled.median_ms
    assert baseline.compiled_within_tolerance is True
