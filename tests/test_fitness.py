from __future__ import annotations

import math

import pytest

from kernelevolve.search.fitness import geomean, score
from kernelevolve.types import INFEASIBLE, Baseline, EvalReport, FitnessValue, Status, TimingStats


def t(ms: float) -> TimingStats:
    return TimingStats(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, max_ms=ms, trials=10)


def rep(status: Status = Status.OK, flags: tuple[str, ...] = (), **latency_ms: float) -> EvalReport:
    return EvalReport(
        candidate_id="c" * 16,
        status=status,
        latency={k: t(v) for k, v in latency_ms.items()},
        flags=flags,
    )


BASE = {
    "small": Baseline(eager=t(2.0), compiled=t(1.0)),
    "large": Baseline(eager=t(8.0), compiled=t(4.0)),
}


def test_infeasible_always_loses() -> None:
    assert FitnessValue(False, 1000.0) < FitnessValue(True, 0.0)
    assert FitnessValue(True, 1.1) > FitnessValue(True, 1.0)
    ranked = sorted([FitnessValue(True, 0.5), INFEASIBLE, FitnessValue(True, 3.0), FitnessValue(False, 9.0)])
    assert [f.feasible for f in ranked] == [False, False, True, True]
    assert ranked[-1].objective == 3.0


def test_geomean_speedups() -> None:
    f = score(rep(small=1.0, large=2.0), BASE)  # speedups 2 and 4 vs eager, 1 and 2 vs compile
    assert f.feasible
    assert f.objective == pytest.approx(math.sqrt(8.0))
    assert f.speedup_vs_compile == pytest.approx(math.sqrt(2.0))
    slower = score(rep(small=4.0, large=16.0), BASE)
    assert slower.objective == pytest.approx(0.5) and slower < f


def test_geomean_helper() -> None:
    assert geomean([1.0, 4.0, 16.0]) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        geomean([])
    with pytest.raises(ValueError):
        geomean([1.0, 0.0])


@pytest.mark.parametrize("status", [s for s in Status if s is not Status.OK])
def test_non_ok_status_is_infeasible(status: Status) -> None:
    f = score(rep(status, small=1.0, large=1.0), BASE)
    assert f == INFEASIBLE and not f.feasible


def test_missing_latency_is_infeasible() -> None:
    assert score(rep(small=1.0), BASE) == INFEASIBLE
    assert score(rep(small=1.0, large=0.0), BASE) == INFEASIBLE
    assert score(rep(small=1.0, large=float("nan")), BASE) == INFEASIBLE
    assert score(rep(), {}) == INFEASIBLE  # OK but nothing measured


def test_missing_baseline_uses_available_shapes() -> None:
    f = score(rep(small=1.0, large=2.0, extra=5.0), {"small": BASE["small"]})
    assert f.feasible and f.objective == pytest.approx(2.0)
    assert f.speedup_vs_compile == pytest.approx(1.0)


def test_no_baseline_at_all_is_feasible_with_zero_objective() -> None:
    f = score(rep(small=1.0), {})
    assert f.feasible and f.objective == 0.0 and f.speedup_vs_compile is None
    assert f > INFEASIBLE


def test_compile_speedup_needs_every_shape() -> None:
    base = {"small": BASE["small"], "large": Baseline(eager=t(8.0), compiled=None, compile_error="boom")}
    f = score(rep(small=1.0, large=2.0), base)
    assert f.objective == pytest.approx(math.sqrt(8.0)) and f.speedup_vs_compile is None


def test_report_baselines_are_a_fallback() -> None:
    r = EvalReport(
        candidate_id="c" * 16,
        status=Status.OK,
        latency={"small": t(1.0), "large": t(2.0)},
        baselines={"small": Baseline(eager=t(100.0)), "large": BASE["large"]},
    )
    # Run-level baselines win where given; the report's own fill the rest.
    f = score(r, {"small": BASE["small"]})
    assert f.objective == pytest.approx(math.sqrt(2.0 * 4.0))
    alone = score(r, {})
    assert alone.objective == pytest.approx(math.sqrt(100.0 * 4.0)) and alone.speedup_vs_compile is None


def test_unverified_excessive_speedup_cannot_win() -> None:
    flagged = rep(flags=("excessive_speedup",), small=0.001, large=0.001)
    assert score(flagged, BASE) == INFEASIBLE
    verified = rep(flags=("excessive_speedup", "reverified"), small=0.001, large=0.001)
    f = score(verified, BASE)
    assert f.feasible and f.objective == pytest.approx(math.sqrt(2000.0 * 8000.0))
