"""Host-bound baselines measured again alone after a sweep call: which records, what they keep."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.bench.sweep import quiet as sweep_quiet
from kernelevolve.bench.sweep.run import record_from_results
from kernelevolve.bench.sweep.summary import summarize
from kernelevolve.bench.sweep.summary_markdown import summary_markdown
from kernelevolve.types import Baseline, KernelSpec, TimingStats


def _timing(median_ms: float, host_ms: float | None) -> TimingStats:
    return TimingStats(median_ms, median_ms, 0.0, median_ms, median_ms, 100, "cuda_event", host_ms)


def _record(**overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "problem": "L3/20",
        "wall_s": 1.0,
        "status": "ok",
        "eager_ms": 3.6,
        "eager_host_ms": 3.5,  # issuing a call took as long as running it: host-bound
        "compile_ms": 1.7,
        "compile_host_ms": 0.2,
        "eager_exact_ms": 3.4,
        "compile_exact_ms": 2.5,
        "compile_graphs_ms": 0.9,
        "best_ms": 0.75,
        "speedup_vs_eager": 3.6 / 0.75,
        "speedup_vs_compile": 1.7 / 0.75,
        "strict": {"correct": True, "best_ms": 7.2, "speedup_vs_eager": 0.5, "speedup_vs_compile": 0.24},
        "permissive": {"correct": True, "best_ms": 0.75, "speedup_vs_eager": 4.8, "speedup_vs_compile": 2.3},
    }
    record.update(overrides)
    return record


@pytest.fixture
def config_for(tmp_path: Path, add_spec: KernelSpec) -> Any:
    """A record's run config: the tiny add spec as an op.yaml, on the H200 platform."""
    import yaml

    path = tmp_path / "op.yaml"
    shapes = [{"name": s.name, **s.params} for s in add_spec.shapes]
    path.write_text(
        yaml.safe_dump({"name": add_spec.name, "reference_code": add_spec.reference_source, "shapes": shapes})
    )
    return lambda record: {"spec": str(path), "platform": {"name": "h200"}}


class _FakeEvaluator:
    """Measures eager at 1.2 ms (alone: faster) and torch.compile at 1.9 ms (slower than beside others)."""

    def __init__(self, log: list[str], fail: bool = False, scale: float = 1.0) -> None:
        self.log, self.fail, self.scale = log, fail, scale

    def baselines(self, spec: KernelSpec, platform: str) -> dict[str, Baseline]:
        self.log.append(f"measure {spec.name} on {platform}")
        if self.fail:
            raise RuntimeError("the child died")
        return {
            "a": Baseline(
                eager=_timing(0.7 * self.scale, 0.6 * self.scale),
                compiled=_timing(1.0 * self.scale, 0.1 * self.scale),
                eager_exact=_timing(1.0 * self.scale, 0.9 * self.scale),
                compiled_exact=_timing(1.2 * self.scale, 0.1 * self.scale),
                compiled_graphs=_timing(0.3 * self.scale, 0.1 * self.scale),
            ),
            "b": Baseline(
                eager=_timing(0.5 * self.scale, 0.4 * self.scale),
                compiled=_timing(0.9 * self.scale, 0.1 * self.scale),
                eager_exact=_timing(0.5 * self.scale, 0.4 * self.scale),
                compiled_exact=_timing(1.0 * self.scale, 0.1 * self.scale),
                compiled_graphs=_timing(0.4 * self.scale, 0.1 * self.scale),
            ),
        }

    def close(self) -> None:
        self.log.append("closed")


def test_host_bound_means_issue_time_near_the_calls_time() -> None:
    assert sweep_quiet.host_bound({"eager_ms": 1.5, "eager_host_ms": 1.4})
    assert sweep_quiet.host_bound(
        {"eager_ms": 5.0, "eager_host_ms": 0.1, "compile_ms": 0.7, "compile_host_ms": 0.6}
    )
    assert not sweep_quiet.host_bound(
        {"eager_ms": 5.0, "eager_host_ms": 0.1, "compile_ms": 3.0, "compile_host_ms": 0.2}
    )
    assert not sweep_quiet.host_bound({"eager_ms": 5.0, "eager_host_ms": None})  # CPU timing: no host figure


def test_records_carry_the_baselines_host_time() -> None:
    baselines = {
        "a": Baseline(eager=_timing(1.0, 0.8), compiled=_timing(0.5, 0.3)).to_json(),
        "b": Baseline(eager=_timing(2.0, 0.1), compiled=_timing(1.0, 0.2)).to_json(),
    }
    record = record_from_results({"baselines": baselines, "strict": False})
    assert record["eager_host_ms"] == pytest.approx(0.9) and record["compile_host_ms"] == pytest.approx(0.5)
    no_host = {"a": Baseline(eager=_timing(1.0, None)).to_json()}
    assert record_from_results({"baselines": no_host})["eager_host_ms"] is None


def test_a_host_bound_record_keeps_the_faster_of_each_measurement(config_for: Any) -> None:
    calls: list[str] = []
    stored: list[dict[str, Any]] = []
    record = _record()
    done = sweep_quiet.remeasure([record], config_for, lambda config: _FakeEvaluator(calls), stored.append)
    # eager 3.6 ms beside others, 1.2 alone: they disagree, so it is measured alone twice (alike here)
    assert done == ["L3/20"] and calls == ["measure tiny_add on h200", "closed"] * 2
    (updated,) = stored
    assert updated["eager_ms"] == pytest.approx(1.2)  # alone: 0.7 + 0.5 at the two shapes, faster
    assert updated["compile_ms"] == pytest.approx(1.7)  # beside others was faster: kept
    assert updated["eager_exact_ms"] == pytest.approx(1.5)
    assert updated["compile_exact_ms"] == pytest.approx(2.2)  # alone: 1.2 + 1.0, faster than 2.5
    assert updated["in_search_baselines"]["compile_exact_ms"] == 2.5
    assert updated["compile_graphs_ms"] == pytest.approx(0.7)  # alone: 0.3 + 0.4, faster than 0.9
    assert updated["speedup_vs_eager"] == pytest.approx(1.2 / 0.75)
    assert updated["permissive"]["speedup_vs_eager"] == pytest.approx(1.2 / 0.75)
    assert updated["strict"]["speedup_vs_compile"] == pytest.approx(1.7 / 7.2)
    assert updated["in_search_baselines"]["eager_ms"] == 3.6
    assert updated["quiet_baselines"]["eager_ms"] == pytest.approx(1.2)
    assert updated["quiet_baselines"]["compile_ms"] == pytest.approx(1.9)
    assert record["eager_ms"] == 3.6  # the caller's record is not changed in place
    assert updated["quiet_baselines"]["measurements"] == 2
    assert not sweep_quiet.needs_quiet_baselines(updated)  # measured, not again


def test_a_measurement_alone_that_agrees_is_taken_once(config_for: Any) -> None:
    calls: list[str] = []
    stored: list[dict[str, Any]] = []
    record = _record(eager_ms=1.3, compile_ms=1.8)  # alone: 1.2 and 1.9, within DISAGREEMENT
    sweep_quiet.remeasure([record], config_for, lambda config: _FakeEvaluator(calls), stored.append)
    assert calls == ["measure tiny_add on h200", "closed"]
    assert stored[0]["quiet_baselines"]["measurements"] == 1
    assert stored[0]["eager_ms"] == pytest.approx(1.2) and stored[0]["compile_ms"] == pytest.approx(1.8)


def test_where_they_disagree_each_baseline_keeps_the_fastest_of_three(config_for: Any) -> None:
    """MobileNetV2 in the tenth sample run: torch.compile 0.844 ms beside others, 2.417 alone."""
    stored: list[dict[str, Any]] = []
    record = _record(eager_ms=1.25, compile_ms=0.844)
    evaluators = iter([_FakeEvaluator([], scale=2.0), _FakeEvaluator([], scale=0.5)])
    sweep_quiet.remeasure([record], config_for, lambda config: next(evaluators), stored.append)
    (updated,) = stored
    quiet = updated["quiet_baselines"]
    assert quiet["measurements"] == 2
    assert quiet["eager_ms"] == pytest.approx(0.6) and quiet["compile_ms"] == pytest.approx(0.95)
    assert quiet["eager_host_ms"] == pytest.approx(0.5)  # the faster measurement's own issue time
    assert updated["eager_ms"] == pytest.approx(0.6)
    assert updated["compile_ms"] == pytest.approx(0.844)  # beside others was faster than both alone
    assert updated["compile_graphs_ms"] == pytest.approx(0.35)


def test_a_failed_second_measurement_keeps_the_first(config_for: Any) -> None:
    calls: list[str] = []
    stored: list[dict[str, Any]] = []
    evaluators = iter([_FakeEvaluator(calls), _FakeEvaluator(calls, fail=True)])
    sweep_quiet.remeasure([_record()], config_for, lambda config: next(evaluators), stored.append)
    assert stored[0]["quiet_baselines"]["measurements"] == 1
    assert stored[0]["eager_ms"] == pytest.approx(1.2)
    assert calls.count("closed") == 2


def test_only_records_that_need_it_are_measured(config_for: Any) -> None:
    calls: list[str] = []
    records = [
        _record(eager_host_ms=0.1, compile_host_ms=0.1),  # not host-bound
        _record(quiet_baselines={"eager_ms": 1.0}),  # done already
        _record(status="no_correct_kernel"),
    ]
    assert (
        sweep_quiet.remeasure(records, config_for, lambda config: _FakeEvaluator(calls), lambda r: None) == []
    )
    assert calls == []


def test_a_failed_measurement_leaves_the_record_and_the_rest_go_on(config_for: Any) -> None:
    calls: list[str] = []
    stored: list[dict[str, Any]] = []
    evaluators = iter([_FakeEvaluator(calls, fail=True), _FakeEvaluator(calls)])
    second = _record(problem="L3/9")
    done = sweep_quiet.remeasure(
        [_record(), second], config_for, lambda config: next(evaluators), stored.append
    )
    assert done == ["L3/9"] and [r["problem"] for r in stored] == ["L3/9"]
    assert calls.count("closed") == 2  # closed after the failure too


def test_nothing_starts_past_the_deadline(config_for: Any) -> None:
    calls: list[str] = []
    nothing = sweep_quiet.remeasure(
        [_record()], config_for, lambda c: _FakeEvaluator(calls), lambda r: None, 0.0
    )
    assert nothing == []
    assert calls == []


def test_the_summary_shows_both_measurements_and_flags_unchecked_ones(config_for: Any) -> None:
    measured: list[dict[str, Any]] = []
    sweep_quiet.remeasure([_record()], config_for, lambda config: _FakeEvaluator([]), measured.append)
    unchecked = _record(problem="L3/28", eager_ms=2.0, eager_host_ms=1.9, name="v")
    summary = summarize(
        [
            {**measured[0], "name": "m", "level": 3, "correct": True},
            {**unchecked, "correct": True, "level": 3},
        ]
    )
    rows = {row["problem"]: row for row in summary["host_bound_baselines"]}
    assert rows["L3/20"]["eager_ms"] == [3.6, pytest.approx(1.2)] and rows["L3/20"]["measured_again"]
    assert rows["L3/20"]["measurements_alone"] == 2  # 3.6 beside others and 1.2 alone disagree
    assert rows["L3/28"]["eager_ms"] == [2.0, None] and not rows["L3/28"]["measured_again"]
    text = summary_markdown(summary)
    assert "### Host-bound baselines" in text and "| L3/28 | 2 | - |" in text
    assert "| yes, twice |" in text and text.count("| no |") == 1


def test_a_sweep_call_measures_its_folders_host_bound_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, add_spec: KernelSpec
) -> None:
    from kernelevolve.bench.sweep.driver import Sweep
    from kernelevolve.bench.sweep.run import SweepOptions

    out = tmp_path / "sweep"
    (out / "results").mkdir(parents=True)
    (out / "results" / "L3_020.json").write_text(json.dumps(_record(level=3, problem_id=20, name="m")))
    configs: list[dict[str, Any]] = []

    def measure(config: dict[str, Any], make: Any) -> dict[str, Baseline]:
        configs.append(config)
        return make(config).baselines(add_spec, "h200")

    monkeypatch.setattr(sweep_quiet, "_measure", measure)
    sweep = Sweep(SweepOptions(kernelbench_path=tmp_path, out=out, platform="h200"))
    base = {"platform": {"name": "h200"}, "spec": None}
    assert sweep._quiet_baselines(0.0, base, lambda config: _FakeEvaluator([])) == ["L3/20"]
    # measured alone twice: its eager time beside others (3.6 ms) and alone (1.2) disagree
    assert configs == [{"platform": {"name": "h200"}, "spec": "kernelbench:3/20"}] * 2
    stored = json.loads((out / "results" / "L3_020.json").read_text())
    assert stored["eager_ms"] == pytest.approx(1.2) and "quiet_baselines" in stored
    assert "Host-bound baselines" in (out / "summary.md").read_text()


def test_a_sweep_calls_own_problems_are_measured_again_before_older_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, add_spec: KernelSpec
) -> None:
    from kernelevolve.bench.sweep.driver import Sweep
    from kernelevolve.bench.sweep.run import SweepOptions

    out = tmp_path / "sweep"
    (out / "results").mkdir(parents=True)
    for problem_id in (9, 20, 41):
        record = _record(level=3, problem_id=problem_id, problem=f"L3/{problem_id}", name=str(problem_id))
        (out / "results" / f"L3_{problem_id:03d}.json").write_text(json.dumps(record))
    monkeypatch.setattr(
        sweep_quiet, "_measure", lambda config, make: make(config).baselines(add_spec, "h200")
    )
    sweep = Sweep(SweepOptions(kernelbench_path=tmp_path, out=out, platform="h200"))
    base = {"platform": {"name": "h200"}, "spec": None}
    done = sweep._quiet_baselines(0.0, base, lambda config: _FakeEvaluator([]), first=["L3/41"])
    assert done == ["L3/41", "L3/9", "L3/20"]
