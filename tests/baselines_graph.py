"""A search graph holding the baselines event the engine records before seeding, for operators that
read it (compiler_seed's ranking, tune's choices, reference-copy seeds at eager's precision)."""

from __future__ import annotations

from kernelevolve.search.graph import SearchGraph
from kernelevolve.types import Baseline, TimingStats


def graph_with_baselines(
    eager_ms: float, eager_exact_ms: float | None, eager_within_tolerance: bool | None = None
) -> SearchGraph:
    """One shape: eager at PyTorch's default precision, eager at exact fp32 (None: not timed so, as
    without convolutions), and whether eager's own output met the tolerance."""

    def stats(ms: float) -> TimingStats:
        return TimingStats(ms, ms, 0.0, ms, ms, 100, "cuda_event")

    baseline = Baseline(
        stats(eager_ms),
        eager_exact=stats(eager_exact_ms) if eager_exact_ms else None,
        eager_within_tolerance=eager_within_tolerance,
    )
    graph = SearchGraph()
    graph.record_event("baselines", {"shapes": {"default": baseline.to_json()}})  # as the engine does
    return graph
