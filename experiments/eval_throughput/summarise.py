"""Where evaluation time goes in kernelevolve runs: evaluations per minute and per-stage seconds.

    python experiments/eval_throughput/summarise.py <run dir> [<run dir> ...]

Reads each run's results.json (search wall clock) and graph.jsonl (every report's `phase_s`, the
harness's own per-stage timer). "other" is the report's wall time not inside a named stage
(reference loading, gc). "in flight" is the mean number of evaluations running at once (sum of
report wall times over search wall time: below the worker count means the search did not keep its
workers busy); "device busy" is the share of search wall time spent in the locked stages (build,
correctness, timing): the ceiling on throughput is reached when it nears 100%.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

STAGES = ("static", "load", "precompile", "device_wait", "build", "correctness", "timing", "compile")
LOCKED = ("build", "correctness", "timing")


def summarise(run_dir: Path) -> dict[str, object]:
    results = json.loads((run_dir / "results.json").read_text())
    totals: dict[str, float] = defaultdict(float)
    reports = 0
    wall = 0.0
    for line in (run_dir / "graph.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("type") != "report":
            continue
        report = record["report"]
        reports += 1
        wall += float(report.get("wall_s", 0.0))
        phases = report.get("phase_s") or {}
        for stage, seconds in phases.items():
            totals[stage] += float(seconds)
        totals["other"] += float(report.get("wall_s", 0.0)) - sum(float(v) for v in phases.values())
    search_s = float(results["time"]["wall_s"])
    return {
        "run": run_dir.name,
        "evaluations": reports,
        "search_s": search_s,
        "evals_per_min": 60.0 * reports / search_s if search_s else 0.0,
        "mean_eval_s": wall / reports if reports else 0.0,
        "stages": {k: totals[k] / reports for k in (*STAGES, "other") if reports and k in totals},
        "in_flight": wall / search_s if search_s else 0.0,
        "device_busy": sum(totals[k] for k in LOCKED) / search_s if search_s else 0.0,
        "baseline_s": float(results.get("baseline_measurement_s", 0.0)),
    }


def main(paths: list[str]) -> None:
    print(
        "| run | evals | search s | evals/min | mean eval s | mean s per stage | in flight | device busy | baselines s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        row = summarise(Path(path))
        stages = ", ".join(f"{k} {v:.2f}" for k, v in row["stages"].items())  # type: ignore[union-attr]
        print(
            f"| {row['run']} | {row['evaluations']} | {row['search_s']:.1f} | {row['evals_per_min']:.1f} "
            f"| {row['mean_eval_s']:.2f} | {stages} | {row['in_flight']:.2f} | {100 * row['device_busy']:.0f}% "
            f"| {row['baseline_s']:.1f} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
