"""Own kernels vs library calls: the strict classification of winners (best vs best_strict in
results.json), the GPU time split (its CPU path through an evaluation child, its parts, and the real
profiler on a GPU), and which mode a config asks for."""

from __future__ import annotations

from typing import Any

import pytest

from kernelevolve.app import _time_split, eval_settings
from kernelevolve.config import ConfigError
from kernelevolve.eval.own_kernels import kernel_use
from kernelevolve.eval.time_split import (
    classify_kernel,
    kernel_names,
    kernel_time_split,
    profile_request,
    split_events,
    summarise,
)
from kernelevolve.platforms import Platform, load_platform
from kernelevolve.results.outputs import build_results, summary_table
from kernelevolve.search.graph import SearchGraph, best_strict
from kernelevolve.types import (
    Baseline,
    Candidate,
    EvalReport,
    EvalRequest,
    EvalSettings,
    FitnessValue,
    KernelSpec,
    Status,
    TimingStats,
)
from tests.gpu import needs_cuda

# A Triton ReLU after a cuBLAS matmul: what compiler_seed makes of mm + relu (permissive mode only).
LIBRARY_SOURCE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        c = torch.mm(a, b)
        out = torch.empty_like(c)
        n = c.numel()
        relu_kernel[(triton.cdiv(n, 128),)](c, out, n, BLOCK=128)
        return out
"""

MM_RELU_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.relu(torch.mm(a, b))


n = 256


def get_inputs():
    return [torch.randn(n, n), torch.randn(n, n)]


def get_init_inputs():
    return []
"""


def _stats(ms: float) -> TimingStats:
    return TimingStats(ms, ms, 0.0, ms, ms, 3)


def _graph(entries: list[tuple[str, float]]) -> SearchGraph:
    """A graph of feasible nodes: (source, speedup vs eager) each, timed at one shape."""
    graph = SearchGraph()
    for index, (source, speedup) in enumerate(entries):
        candidate = Candidate(source + f"\n# variant {index}\n", "triton", "test")
        graph.add_candidate(candidate)
        report = EvalReport(candidate.id, Status.OK, latency={"default": _stats(1.0 / speedup)})
        graph.record(candidate.id, report, FitnessValue(True, speedup, speedup / 2))
    return graph


def _results(graph: SearchGraph, baseline: Baseline | None = None) -> dict[str, Any]:
    spec = KernelSpec("mm_relu", MM_RELU_REFERENCE)
    baselines = {"default": baseline or Baseline(eager=_stats(1.0), compiled=_stats(0.5))}
    return build_results(
        spec=spec,
        platform="cpu",
        graph=graph,
        baselines=baselines,
        stop_reason="max_evaluations",
        elapsed_s=1.0,
        evaluations_this_session=len(graph),
    )


def test_library_source_is_permissive_only(add_kernel) -> None:
    library = kernel_use(Candidate(LIBRARY_SOURCE, "triton", "test"))
    assert library.uses_library and not library.own_kernels_only
    assert library.strict_issues == ("torch_compute_op",)
    own = kernel_use(Candidate(add_kernel(), "triton", "test"))
    assert own.own_kernels_only and not own.uses_library and own.strict_issues == ()


def test_best_strict_beside_a_library_winner_of_a_permissive_run(add_kernel) -> None:
    graph = _graph([(add_kernel(), 1.5), (LIBRARY_SOURCE, 3.0), (add_kernel(), 1.2)])
    results = _results(graph)
    best, strict = results["best"], results["best_strict"]
    assert best["speedup_vs_eager"] == 3.0  # `best` is unchanged: the library winner
    assert best["own_kernels_only"] is False and best["uses_library"] is True
    assert strict["speedup_vs_eager"] == 1.5 and strict["own_kernels_only"] is True
    assert strict["id"] == best_strict(graph).id != best["id"]  # type: ignore[union-attr]
    assert results["best_by_backend"]["triton"]["id"] == best["id"]
    text = summary_table(results)
    assert f"best with own kernels only: {strict['id']}" in text and "1.50x vs eager" in text


def test_the_run_summary_says_when_a_baseline_misses_the_tolerance(add_kernel) -> None:
    graph = _graph([(add_kernel(), 1.5)])
    off = Baseline(
        eager=_stats(1.0), compiled=_stats(0.5), compiled_within_tolerance=False, compiled_max_error=0.25
    )
    results = _results(graph, off)
    (row,) = results["best"]["shapes"]
    assert row["compile_within_tolerance"] is False and row["compile_max_error"] == 0.25
    assert "note: torch.compile's own output misses the spec's tolerance at default (max abs error 0.25)" in (
        summary_table(results)
    )
    assert "misses" not in summary_table(_results(graph))  # baselines not checked: nothing said
    exact = Baseline(**{**vars(off), "compiled_exact": _stats(2.0), "compiled_exact_within_tolerance": True})
    results = _results(graph, exact)
    (row,) = results["best"]["shapes"]
    assert row["compile_exact_ms"] == 2.0 and row["compile_exact_within_tolerance"] is True
    assert (
        "note: torch.compile with exact fp32 convolutions takes 2.0000 ms at default (3.00x of it) and its output "
        "meets the tolerance" in summary_table(results)
    )
    failed = SearchGraph()
    candidate = Candidate(add_kernel(), "triton", "test")
    failed.add_candidate(candidate)
    failed.record(candidate.id, EvalReport(candidate.id, Status.INCORRECT), FitnessValue(False, 0.0, 0.0))
    assert "python -m kernelevolve.eval.conditioning" in summary_table(_results(failed))


def test_best_strict_is_best_when_it_uses_own_kernels_and_none_without_any(add_kernel) -> None:
    results = _results(_graph([(LIBRARY_SOURCE, 1.0), (add_kernel(), 2.0)]))
    assert results["best_strict"]["id"] == results["best"]["id"]
    assert results["best"]["own_kernels_only"] is True
    only_library = _results(_graph([(LIBRARY_SOURCE, 2.0)]))
    assert only_library["best"] is not None and only_library["best_strict"] is None
    assert "best with own kernels only: none" in summary_table(only_library)
    assert _results(SearchGraph())["best_strict"] is None


def test_kernel_names_and_classification() -> None:
    assert kernel_names(LIBRARY_SOURCE) == ("relu_kernel",)
    assert kernel_names("not python (") == ()
    own = ("relu_kernel",)
    assert classify_kernel("relu_kernel", own) == "own"
    assert classify_kernel("kernel_cutlass_relu_kernel_tensorptrf32_0", own) == "own"  # CuTe's naming
    assert classify_kernel("relu_kernel_2", ("k",)) == "other"  # `k` is no piece of that name
    for library in ("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", "nvjet_tst_128x64", "cudnn::winograd"):
        assert classify_kernel(library, own) == "library"
    assert classify_kernel("void at::native::vectorized_elementwise_kernel<4>", own) == "other"
    assert classify_kernel("Memset (Device)", own) == "other"


def test_split_events_per_call_and_summary_shares() -> None:
    events = [("relu_kernel", 30.0), ("ampere_sgemm_64x64_nn", 50.0), ("Memcpy DtoD", 20.0)] * 2
    split = split_events(events, ("relu_kernel",), calls=2)
    assert split == pytest.approx({"own_ms": 0.03, "library_ms": 0.05, "other_ms": 0.02})
    summary = summarise({"a": split, "b": split}, ("relu_kernel",))
    assert summary["own_ms"] == pytest.approx(0.06) and summary["library_share"] == pytest.approx(0.5)
    assert summary["own_share"] + summary["library_share"] + summary["other_share"] == pytest.approx(1.0)
    assert set(summary["shapes"]) == {"a", "b"} and summary["kernel_names"] == ["relu_kernel"]
    empty = summarise({}, ())
    assert empty["own_ms"] == 0.0 and empty["own_share"] is None


def test_time_split_is_none_on_the_cpu(cpu_platform: Platform, fast_settings: EvalSettings) -> None:
    torch = pytest.importorskip("torch")
    assert kernel_time_split(torch.nn.ReLU(), [torch.randn(4)], ("relu_kernel",)) is None
    spec = KernelSpec("mm_relu", MM_RELU_REFERENCE)
    request = EvalRequest(Candidate(LIBRARY_SOURCE, "triton", "test"), spec, "cpu", fast_settings)
    assert profile_request(request, cpu_platform, "cpu") is None


class _ProfilingEvaluator:
    def __init__(self) -> None:
        self.requests: list[EvalRequest] = []

    def profile(self, request: EvalRequest) -> dict[str, Any] | None:
        self.requests.append(request)
        return {"own_ms": 1.0}


def test_the_search_profiles_its_winner_only_on_a_gpu(add_kernel, fast_settings: EvalSettings) -> None:
    best = _graph([(add_kernel(), 2.0)]).best()
    spec = KernelSpec("mm_relu", MM_RELU_REFERENCE)
    evaluator = _ProfilingEvaluator()
    cpu, gpu = load_platform("cpu"), load_platform("h200")
    assert _time_split(evaluator, best, spec, cpu, fast_settings) is None  # type: ignore[arg-type]
    assert _time_split(evaluator, None, spec, gpu, fast_settings) is None  # type: ignore[arg-type]
    assert evaluator.requests == []
    assert _time_split(evaluator, best, spec, gpu, fast_settings) == {"own_ms": 1.0}  # type: ignore[arg-type]
    assert best is not None and evaluator.requests[0].candidate == best.candidate
    assert evaluator.requests[0].platform == "h200"
    assert _time_split(object(), best, spec, gpu, fast_settings) is None  # type: ignore[arg-type]


def test_profile_op_of_an_evaluation_child_on_the_cpu(
    cpu_platform: Platform, fast_settings: EvalSettings, add_spec: KernelSpec, add_kernel
) -> None:
    from kernelevolve.eval.local import LocalEvaluator

    request = EvalRequest(Candidate(add_kernel(), "triton", "test"), add_spec, "cpu", fast_settings)
    with LocalEvaluator(cpu_platform, fast_settings) as evaluator:
        assert evaluator.profile(request) is None
        assert evaluator.submit(request).result().status is Status.OK  # the child still serves


def test_top_level_strict_sets_the_mode_and_platform_eval_does_not_take_it() -> None:
    cfg: dict[str, Any] = {"platform": {"eval": {"timing_trials": 3}}, "strict": True}
    assert eval_settings(cfg).strict is True
    assert eval_settings({**cfg, "strict": False}).strict is False
    # One place for the mode: a platform file cannot quietly relax what the command line asked for.
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['strict'\]"):
        eval_settings({"platform": {"eval": {"strict": False}}, "strict": True})


@pytest.mark.gpu
@needs_cuda
def test_time_split_on_a_gpu_counts_our_kernel_and_cublas(tmp_path, monkeypatch) -> None:
    import torch

    from kernelevolve.backends import get_backend

    monkeypatch.setenv("KERNELEVOLVE_SCRATCH", str(tmp_path))
    model = get_backend("triton").load(LIBRARY_SOURCE, "kernelevolve_time_split_test").ModelNew().cuda()
    a, b = torch.randn(1024, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda")
    split = kernel_time_split(model, [a, b], kernel_names(LIBRARY_SOURCE))
    assert split is not None
    assert split["own_ms"] > 0 and split["library_ms"] > 0, split
    # the matmul dominates a ReLU over its result
    assert split["library_ms"] > split["own_ms"], split

    spec = KernelSpec("mm_relu", MM_RELU_REFERENCE)
    settings = EvalSettings(strict=False)
    request = EvalRequest(Candidate(LIBRARY_SOURCE, "triton", "test"), spec, "h200", settings)
    summary = profile_request(request, load_platform("h200"), "cuda:0")
    assert summary is not None and 0 < summary["library_share"] < 1 and summary["shapes"]["default"]


def test_permissive_runs_give_every_third_one_parent_job_to_the_best_own_kernel_node(
    add_kernel, library_kernel, add_spec, cpu_platform
) -> None:
    from kernelevolve.search.engine import STRICT_TURN, Engine
    from kernelevolve.search.graph import SearchGraph
    from kernelevolve.types import Candidate, EvalReport, EvalSettings, FitnessValue, Status, TimingStats

    own = Candidate(add_kernel(), "triton", "t")
    library = Candidate(library_kernel(), "triton", "t")
    graph = SearchGraph()
    for candidate, objective in ((own, 1.0), (library, 2.0)):  # the library node leads
        graph.add_candidate(candidate)
        latency = {"n64": TimingStats.from_samples([1.0 / objective], "wall")}
        graph.record(
            candidate.id, EvalReport(candidate.id, Status.OK, latency=latency), FitnessValue(True, objective)
        )

    def engine(strict: bool) -> Engine:
        return Engine(
            add_spec,
            cpu_platform,
            graph,
            None,
            [object()],
            None,
            None,
            None,  # type: ignore[arg-type, list-item]
            EvalSettings(strict=strict),
            ("triton",),
        )

    permissive = engine(strict=False)
    picks = [permissive.dispatch.with_strict_turn((library.id,)) for _ in range(2 * STRICT_TURN)]
    assert picks.count((own.id,)) == 2 and picks.count((library.id,)) == 2 * STRICT_TURN - 2
    assert permissive.dispatch.with_strict_turn((library.id, own.id)) == (
        library.id,
        own.id,
    )  # two-parent jobs as chosen
    strict = engine(strict=True)
    assert all(
        strict.dispatch.with_strict_turn((library.id,)) == (library.id,) for _ in range(2 * STRICT_TURN)
    )
