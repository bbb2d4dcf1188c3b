"""A sweep's results in KernelBench's terms: correctness rate, fast_p and geomean speedups.

fast_p is the fraction of problems whose kernel is correct AND faster than the baseline by more
than a factor p (KernelBench's metric); the denominator is every problem with a result, failures
included. Geomean speedups are over the correct problems only. Everything is computed per level
and overall, against PyTorch eager and against torch.compile. `summarize` works on plain result
records (as written by `kernelevolve.bench.sweep`), so the HTML report can call it too.

Each measure is given per mode: "strict" counts a problem's best kernel that uses our own kernels
only; "permissive" (only for sweeps run in permissive mode) its best kernel, which may call cuBLAS
or cuDNN through PyTorch. The top-level `overall` and `levels` are the sweep's own mode. The Markdown
of a summary, and the writing of summary.json and summary.md, are `summary_markdown.py`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelevolve.bench.kernelbench.judge.agreement import judge_agreement
from kernelevolve.bench.sweep.gaps import furthest_behind
from kernelevolve.bench.sweep.precision import precision_rows
from kernelevolve.bench.sweep.roofline import roofline_summary
from kernelevolve.results.format import first_line
from kernelevolve.search.fitness import geomean_of_positive

FAST_P = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
BASELINES = ("eager", "compile")
MODES = {"strict": "strict (own kernels only)", "permissive": "permissive (library calls allowed)"}
LIBRARY_ONLY = "library_only"  # strict view of a problem whose correct kernels all call PyTorch's libraries
RESULTS_DIR = "results"
SUMMARY_MD = "summary.md"
SUMMARY_JSON = "summary.json"
MANIFEST = "sweep.json"


def load_records(sweep_dir: Path) -> list[dict[str, Any]]:
    """Every per-problem result of a sweep folder, sorted by (level, problem id)."""
    records = []
    for path in sorted((sweep_dir / RESULTS_DIR).glob("*.json")):
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError):
            continue  # a torn write: that problem runs again on the next call
    return sorted(records, key=lambda r: (int(r["level"]), int(r["problem_id"])))


def _speedup(record: dict[str, Any], baseline: str) -> float | None:
    value = record.get(f"speedup_vs_{baseline}")
    return float(value) if value is not None else None


def group_metrics(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Correctness, fast_p and geomeans for one group of problem records."""
    total = len(records)
    correct = [r for r in records if r.get("correct")]
    out: dict[str, Any] = {
        "problems": total,
        "correct": len(correct),
        "correctness_rate": len(correct) / total if total else None,
        "statuses": {},
    }
    for record in records:
        out["statuses"][record["status"]] = out["statuses"].get(record["status"], 0) + 1
    for baseline in BASELINES:
        speedups = [_speedup(r, baseline) for r in correct]
        known = [s for s in speedups if s is not None]
        out[f"geomean_speedup_vs_{baseline}"] = geomean_of_positive(known)
        out[f"correct_without_{baseline}_baseline"] = len(speedups) - len(known)
        out[f"fast_p_vs_{baseline}"] = {
            _p_key(p): (sum(1 for s in known if s > p) / total if total else None) for p in FAST_P
        }
    return out


def _p_key(p: float) -> str:
    return f"{p:g}"


def mode_record(record: dict[str, Any], mode: str) -> dict[str, Any]:
    """The record as one mode sees it: its `strict` or `permissive` winner in place of the run's own."""
    entry = record.get(mode)
    if not isinstance(entry, dict):
        return record  # a failed run, a strict run's permissive side, or a record from before modes
    view = {**record, **entry}
    if record.get("correct") and not entry.get("correct"):
        view["status"] = LIBRARY_ONLY
    return view


def sweep_mode(records: list[dict[str, Any]]) -> str:
    return "permissive" if any(r.get("mode") == "permissive" for r in records) else "strict"


def _by_level(records: list[dict[str, Any]]) -> dict[str, Any]:
    levels = sorted({int(r["level"]) for r in records})
    return {str(level): group_metrics([r for r in records if int(r["level"]) == level]) for level in levels}


def summarize(records: list[dict[str, Any]], selected: list[str] | None = None) -> dict[str, Any]:
    """Overall and per-level metrics (per mode too), the failures, and which selected problems have
    no result yet."""
    done = {r["problem"] for r in records}
    mode = sweep_mode(records)
    modes = ("strict", "permissive") if mode == "permissive" else ("strict",)
    views = {name: [mode_record(r, name) for r in records] for name in modes}
    return {
        "fast_p": list(FAST_P),
        "mode": mode,
        "overall": group_metrics(records),
        "levels": _by_level(records),
        "modes": {
            name: {"overall": group_metrics(views[name]), "levels": _by_level(views[name])} for name in modes
        },
        "failures": [
            {
                "problem": r["problem"],
                "name": r.get("name", ""),
                "status": r["status"],
                "detail": first_line(r.get("error") or r.get("stop_reason") or ""),
                "evaluations": r.get("evaluations", 0),
            }
            for r in records
            if not r.get("correct")
        ],
        "pending": [key for key in (selected or []) if key not in done],
        "furthest_behind_compile": furthest_behind(records),
        "baseline_accuracy": _baseline_accuracy(records, views),
        "host_bound_baselines": _host_bound_baselines(records),
        "vs_compile_with_cuda_graphs": _vs_compile_with_cuda_graphs(records, views),
        # KernelBench's own evaluator on the winners, where the sweep ran it (--kernelbench-judge)
        "kernelbench_judge": judge_agreement(views),
        "roofline": roofline_summary(views),
        "precision_verdicts": precision_rows(records),
        "problems": [
            {
                key: r.get(key)
                for key in (
                    "problem",
                    "name",
                    "status",
                    "best_ms",
                    "eager_ms",
                    "compile_ms",
                    "eager_exact_ms",
                    "speedup_vs_eager",
                    "speedup_vs_compile",
                    "evaluations",
                    "winner_backend",
                    "wall_s",
                    "own_kernels_only",
                    "library_share",
                    "eager_within_tolerance",
                    "compile_within_tolerance",
                    "compile_exact_ms",
                    "compile_exact_within_tolerance",
                    "compile_error",
                    "roofline_fraction",
                )
            }
            | {
                "strict_speedup_vs_eager": strict.get("speedup_vs_eager"),
                "strict_speedup_vs_compile": strict.get("speedup_vs_compile"),
            }
            for r, strict in zip(records, views["strict"], strict=True)
        ],
    }


def _baseline_accuracy(
    records: list[dict[str, Any]], views: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """Which baselines' own outputs miss the tolerance, and the torch.compile measures over the problems
    whose torch.compile output meets it (a speedup against an output no correct kernel may imitate is
    reported, but apart)."""
    checked = [r for r in records if r.get("compile_within_tolerance") is not None]
    meets = {r["problem"] for r in checked if r["compile_within_tolerance"]}
    return {
        "compile_checked": len(checked),
        "compile_outside_tolerance": [r["problem"] for r in checked if not r["compile_within_tolerance"]],
        "eager_outside_tolerance": [
            r["problem"] for r in records if r.get("eager_within_tolerance") is False
        ],
        "vs_compile_where_it_meets_tolerance": {
            mode: group_metrics([r for r in view if r["problem"] in meets]) for mode, view in views.items()
        },
        "vs_compile_that_meets_tolerance": {
            mode: group_metrics(
                [against for r in view if (against := _against_compile_within_tolerance(r)) is not None]
            )
            for mode, view in views.items()
        },
        "vs_eager_that_meets_tolerance": {
            mode: group_metrics(
                [against for r in view if (against := _against_eager_within_tolerance(r)) is not None]
            )
            for mode, view in views.items()
        },
    }


def eager_within_tolerance_ms(record: dict[str, Any]) -> float | None:
    """Eager's time in the configuration whose output meets the tolerance: PyTorch's default where that
    one's does or is already the candidates' precision (no convolution: nothing was checked), its run at
    exact fp32 (the reference itself) where the default's misses it; None where that was not timed."""
    if record.get("eager_within_tolerance") is False:
        return record.get("eager_exact_ms")
    return record.get("eager_ms")


def _against_eager_within_tolerance(view: dict[str, Any]) -> dict[str, Any] | None:
    reference = eager_within_tolerance_ms(view)
    return None if reference is None else _against(view, "eager", reference)


def compile_within_tolerance_ms(record: dict[str, Any]) -> float | None:
    """torch.compile's time in the configuration whose output meets the tolerance: its default where that
    one's does, its run at the candidates' precision (exact fp32 convolutions) where only that one's does;
    None where neither is known to."""
    if record.get("compile_within_tolerance") is True:
        return record.get("compile_ms")
    if (
        record.get("compile_within_tolerance") is False
        and record.get("compile_exact_within_tolerance") is True
    ):
        return record.get("compile_exact_ms")
    return None


def _against_compile_within_tolerance(view: dict[str, Any]) -> dict[str, Any] | None:
    reference = compile_within_tolerance_ms(view)
    return None if reference is None else _against(view, "compile", reference)


def _against(view: dict[str, Any], baseline: str, baseline_ms: float) -> dict[str, Any]:
    """The view with its speedup over `baseline` ("eager" or "compile") taken against `baseline_ms`."""
    best = view.get("best_ms")
    return {**view, f"speedup_vs_{baseline}": baseline_ms / best if view.get("correct") and best else None}


def _host_bound_baselines(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Problems whose baselines the host's issue time set: their two measurements where they were
    measured again alone (`kernelevolve.bench.sweep.quiet`), else only the one taken beside other problems."""
    from kernelevolve.bench.sweep.quiet import host_bound

    rows = []
    for r in records:
        first = r.get("in_search_baselines") or {}
        quiet = r.get("quiet_baselines")
        if not (quiet or (r.get("status") == "ok" and host_bound(r))):
            continue
        rows.append(
            {
                "problem": r["problem"],
                "eager_ms": [first.get("eager_ms", r.get("eager_ms")), (quiet or {}).get("eager_ms")],
                "compile_ms": [first.get("compile_ms", r.get("compile_ms")), (quiet or {}).get("compile_ms")],
                "compile_graphs_ms": r.get("compile_graphs_ms"),
                "measured_again": quiet is not None,
                # twice where the first measurement alone disagreed with the one beside others
                "measurements_alone": quiet.get("measurements", 1) if quiet is not None else 0,
            }
        )
    return rows


def _vs_compile_with_cuda_graphs(
    records: list[dict[str, Any]], views: dict[str, list[dict[str, Any]]]
) -> dict[str, Any] | None:
    """The measures against torch.compile at its faster mode: with CUDA graphs where that was timed (its
    default time host-bound) and faster, its default elsewhere. None where no record has the graphs' time."""
    if not any(r.get("compile_graphs_ms") for r in records):
        return None
    return {
        mode: {
            "problems_with_graphs": sum(1 for r in view if r.get("compile_graphs_ms")),
            **group_metrics([_against_fastest_compile(r) for r in view]),
        }
        for mode, view in views.items()
    }


def _against_fastest_compile(view: dict[str, Any]) -> dict[str, Any]:
    graphs, default = view.get("compile_graphs_ms"), view.get("compile_ms")
    if not graphs or not default or graphs >= default:
        return view
    return _against(view, "compile", graphs)


def metric_groups(metrics: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """("overall", ...) then ("level N", ...) for each level: the rows of a summary table."""
    levels = metrics.get("levels") or {}
    return [("overall", metrics["overall"])] + [(f"level {k}", v) for k, v in levels.items()]
