"""Fitness: a correctness gate first, then geomean speedup over PyTorch eager across shapes.

Rules, in order:

- A report whose status is not OK is infeasible (objective 0).
- A report flagged ``excessive_speedup`` and not ``reverified`` is infeasible: a result beyond the
  plausible bound may not win until a fresh worker has confirmed it.
- The shapes that count are those with a baseline (the run's `baselines`, falling back to the
  report's own per-shape baselines). A shape with a baseline but no latency, or a latency that is
  not a positive finite number, makes the report infeasible: the kernel did not run everywhere.
- A latency for a shape without a baseline is ignored; the objective is the geomean over the shapes
  that have both. If no shape has a baseline at all the kernel is still correct, so it is feasible
  with objective 0 (nothing to compare against) and a warning is logged.
- ``speedup_vs_compile`` is the same geomean against torch.compile when every counted shape has a
  compiled timing, else None.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping

from kernelevolve.types import INFEASIBLE, Baseline, EvalReport, FitnessValue

log = logging.getLogger(__name__)

UNVERIFIED_FLAG = "excessive_speedup"
VERIFIED_FLAG = "reverified"


def geomean(values: list[float]) -> float:
    """Geometric mean of positive numbers (raises on an empty list or a non-positive value)."""
    if not values:
        raise ValueError("geomean of no values")
    if any(not (v > 0 and math.isfinite(v)) for v in values):
        raise ValueError(f"geomean needs positive finite values, got {values}")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def geomean_of_positive(values: Iterable[float | None]) -> float | None:
    """Geometric mean of the positive values among `values` (summaries: a missing figure is skipped);
    None where there are none."""
    kept = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in kept) / len(kept)) if kept else None


def _usable(ms: float) -> bool:
    return ms > 0 and math.isfinite(ms)


def score(report: EvalReport, baselines: Mapping[str, Baseline]) -> FitnessValue:
    """Fitness of one evaluated candidate against per-shape baselines (shape name -> Baseline)."""
    if not report.ok:
        return INFEASIBLE
    if UNVERIFIED_FLAG in report.flags and VERIFIED_FLAG not in report.flags:
        return INFEASIBLE
    merged: dict[str, Baseline] = {**report.baselines, **baselines}
    eager_ratios: list[float] = []
    compile_ratios: list[float] = []
    every_shape_compiled = True
    for shape, base in merged.items():
        timing = report.latency.get(shape)
        if timing is None or not _usable(timing.median_ms):
            return INFEASIBLE
        if not _usable(base.eager.median_ms):
            log.warning("baseline for shape %r has unusable eager latency; shape skipped", shape)
            continue
        eager_ratios.append(base.eager.median_ms / timing.median_ms)
        if base.compiled is not None and _usable(base.compiled.median_ms):
            compile_ratios.append(base.compiled.median_ms / timing.median_ms)
        else:
            every_shape_compiled = False
    if not eager_ratios:
        if not report.latency:
            return INFEASIBLE  # OK status without a single timing: nothing was measured
        log.warning("candidate %s: no baselines to compare against; objective 0", report.candidate_id)
        return FitnessValue(True, 0.0, None)
    vs_compile = geomean(compile_ratios) if every_shape_compiled and compile_ratios else None
    return FitnessValue(True, geomean(eager_ratios), vs_compile)
