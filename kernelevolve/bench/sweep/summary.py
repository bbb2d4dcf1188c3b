"""A sweep's results in KernelBench's terms: correctness rate, fast_p and geomean speedups.

fast_p is the fraction of problems whose kernel is correct AND faster than the baseline by more
than a factor p (KernelBench's metric); the denominator is every problem with a result, failures
included. Geomean speedups are over the correct problems only. Everything is computed per level
and overall, against PyTorch eager and against torch.compile. `summarize` works on plain result
records (as written by `kernelevolve.bench.sweep`), so the HTML report can call it too.

Each measure is given per mode: "strict" counts a problem's best kernel that uses our own kernels
only; "permissive" (only for sweeps run in permissive mode) its best kernel, which may call cuBLAS
or cuDNN through PyTorch. The top-level `overall` and `levels` are the sweep's own mode.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelevolve.bench.kernelbench.judge.agreement import agreement_lines, judge_agreement
from kernelevolve.bench.sweep.gaps import behind_lines, furthest_behind
from kernelevolve.bench.sweep.precision import precision_lines, precision_rows
from kernelevolve.bench.sweep.rate import evaluation_rate, gpu_share_from_settings, rate_lines
from kernelevolve.bench.sweep.roofline import roofline_lines, roofline_summary
from kernelevolve.results.format import first_line, format_ms, format_own, format_percent, format_speedup
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


def _baseline_accuracy_lines(accuracy: dict[str, Any] | None) -> list[str]:
    if not accuracy or not (accuracy.get("compile_checked") or accuracy.get("eager_outside_tolerance")):
        return []
    lines = ["", "### Baselines' own outputs against the tolerance", ""]
    if accuracy.get("compile_checked"):
        lines += _compile_accuracy_lines(accuracy)
    elif accuracy["eager_outside_tolerance"]:
        lines.append(
            f"Eager's (PyTorch's defaults) misses it on {', '.join(accuracy['eager_outside_tolerance'])}."
        )
    eager_within = accuracy.get("vs_eager_that_meets_tolerance") or {}
    if accuracy["eager_outside_tolerance"] and eager_within:
        lines += [
            "",
            "Against the eager whose output meets the tolerance: PyTorch's defaults where that one's does, "
            "exact fp32 convolutions (the reference itself) where it does not (issue 7's eager target at "
            "KernelBench's tolerance):",
            "",
            "| mode | problems | correct | geomean speedup | fast_1 |",
            "|---|---:|---:|---:|---:|",
        ]
        lines += _mode_rows(eager_within, "eager")
    return lines


def _compile_accuracy_lines(accuracy: dict[str, Any]) -> list[str]:
    """torch.compile's misses, and the measures against it where, or in the configuration where, its
    output meets the tolerance."""
    outside = accuracy["compile_outside_tolerance"]
    lines = [
        f"torch.compile's output, as timed, misses the tolerance on {len(outside)} of "
        f"{accuracy['compile_checked']} problems checked" + (f": {', '.join(outside)}." if outside else "."),
    ]
    if accuracy["eager_outside_tolerance"]:
        lines.append(f"Eager's (PyTorch's defaults): {', '.join(accuracy['eager_outside_tolerance'])}.")
    lines += [
        "",
        "Against torch.compile where its output meets the tolerance:",
        "",
        "| mode | problems | correct | geomean speedup | fast_1 |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += _mode_rows(accuracy["vs_compile_where_it_meets_tolerance"])
    within = accuracy.get("vs_compile_that_meets_tolerance") or {}
    where_it_meets = accuracy["vs_compile_where_it_meets_tolerance"]
    # only where some problem is compared with torch.compile's exact-fp32 run is this table a new one
    if any(group["problems"] != where_it_meets[mode]["problems"] for mode, group in within.items()):
        lines += [
            "",
            "Against the torch.compile whose output meets the tolerance: its default where that one's does, "
            "compiled and run with exact fp32 convolutions where only that one's does (problems where neither "
            "is known to are left out):",
            "",
            "| mode | problems | correct | geomean speedup | fast_1 |",
            "|---|---:|---:|---:|---:|",
        ]
        lines += _mode_rows(within)
    return lines


def _mode_rows(groups: dict[str, Any], baseline: str = "compile") -> list[str]:
    """One row per mode: correctness, geomean speedup and fast_1 against `baseline`."""
    return [
        f"| {mode} | {group['problems']} | {format_percent(group['correctness_rate'])} | "
        f"{format_speedup(group[f'geomean_speedup_vs_{baseline}'])} | "
        f"{format_percent(group[f'fast_p_vs_{baseline}'][_p_key(1.0)])} |"
        for mode, group in groups.items()
    ]


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


def _measured_again(row: dict[str, Any]) -> str:
    alone = row["measurements_alone"]
    return "no" if not alone else "yes" if alone == 1 else "yes, twice"


def _host_bound_lines(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = [
        "",
        "### Host-bound baselines",
        "",
        "Baselines whose time the host's issue time set (PyTorch launching many small kernels): timed beside "
        "other problems, they run slower when those load the host. Measured again with nothing else running "
        "where the column says so (twice where the first such measurement and the one beside others "
        "disagreed by over 25%; the faster shown); speedups use the fastest.",
        "",
        "| problem | eager ms beside others | eager ms alone | torch.compile ms beside others | "
        "torch.compile ms alone | torch.compile with CUDA graphs ms | measured again |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        (eager, eager_alone), (compiled, compiled_alone) = row["eager_ms"], row["compile_ms"]
        lines.append(
            f"| {row['problem']} | {format_ms(eager)} | {format_ms(eager_alone)} | {format_ms(compiled)} | "
            f"{format_ms(compiled_alone)} | {format_ms(row.get('compile_graphs_ms'))} | "
            f"{_measured_again(row)} |"
        )
    return lines


def _cuda_graph_lines(groups: dict[str, Any] | None) -> list[str]:
    if not groups:
        return []
    counted = next(iter(groups.values()))["problems_with_graphs"]
    return [
        "",
        'Against torch.compile at its faster mode: with CUDA graphs (what `mode="reduce-overhead"` adds, '
        f"timed on the {counted} problem(s) whose default time is host-bound) where that is faster, its "
        "default elsewhere. A replay of our own removes launch overhead; this is torch.compile's own way to:",
        "",
        "| mode | problems | correct | geomean speedup | fast_1 |",
        "|---|---:|---:|---:|---:|",
        *_mode_rows(groups),
    ]


def _exact_precision_table(problems: list[dict[str, Any]]) -> list[str]:
    """Problems whose eager baseline was also timed at the candidates' precision (GPU convolutions)."""
    return _exact_table(
        problems,
        "eager",
        "eager",
        "### Eager at the candidates' precision",
        "Candidates are checked against a reference with exact fp32 convolutions; the eager baseline above runs "
        "cuDNN in TF32 (PyTorch's default), whose output may miss the fp32 tolerance itself (its column: checked "
        "like a candidate's; where it meets it, candidates may run convolutions in TF32 too). Eager timed exact:",
    )


def _exact_compile_table(problems: list[dict[str, Any]]) -> list[str]:
    """Problems whose torch.compile was also compiled and timed at the candidates' precision."""
    return _exact_table(
        problems,
        "compile",
        "torch.compile",
        "### torch.compile at the candidates' precision",
        "Where torch.compile's output (cuDNN in TF32, PyTorch's default) misses the tolerance, it is compiled and "
        "timed again with exact fp32 convolutions (its column: checked like a candidate's): what a user who "
        "needs the tolerance would run.",
    )


def _exact_table(
    problems: list[dict[str, Any]], baseline: str, label: str, title: str, intro: str
) -> list[str]:
    """A baseline at PyTorch's default precision and at exact fp32, beside the best kernel."""
    rows = [row for row in problems if row.get(f"{baseline}_exact_ms")]
    if not rows:
        return []
    # eager at exact fp32 is the reference itself: only torch.compile's exact run has a verdict of its own
    checked = any(row.get(f"{baseline}_exact_within_tolerance") is not None for row in rows)
    lines = [
        "",
        title,
        "",
        intro,
        "",
        f"| problem | best ms | {label} ms (TF32) | {label} TF32 within tolerance | {label} ms (exact fp32) "
        + ("| exact within tolerance " if checked else "")
        + f"| vs {label} | vs {label} exact |",
        "|---|---:|---:|---|---:|" + ("---|" if checked else "") + "---:|---:|",
    ]
    verdicts = {True: "yes", False: "no", None: "-"}
    for row in rows:
        best, exact = row.get("best_ms"), row[f"{baseline}_exact_ms"]
        lines.append(
            f"| {row['problem']} | {format_ms(best)} | {format_ms(row.get(f'{baseline}_ms'))} | "
            f"{verdicts[row.get(f'{baseline}_within_tolerance')]} | {format_ms(exact)} | "
            + (f"{verdicts[row.get(f'{baseline}_exact_within_tolerance')]} | " if checked else "")
            + f"{format_speedup(row.get(f'speedup_vs_{baseline}'))} | {format_speedup(exact / best if best else None)} |"
        )
    return lines


def metric_groups(metrics: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """("overall", ...) then ("level N", ...) for each level: the rows of a summary table."""
    levels = metrics.get("levels") or {}
    return [("overall", metrics["overall"])] + [(f"level {k}", v) for k, v in levels.items()]


def _mode_tables(metrics: dict[str, Any], mode_label: str) -> list[str]:
    """One mode's fast_p tables, against eager and against torch.compile."""
    groups = metric_groups(metrics)
    p_cols = " | ".join(f"fast_{_p_key(p)}" for p in FAST_P)
    lines: list[str] = []
    for baseline, label in (("eager", "PyTorch eager"), ("compile", "torch.compile")):
        lines += [
            f"## {mode_label[0].upper()}{mode_label[1:]}: against {label}",
            "",
            f"| group | problems | correct | geomean speedup | {p_cols} |",
            "|---|---:|---:|---:|" + "---:|" * len(FAST_P),
        ]
        for name, group in groups:
            fast = group[f"fast_p_vs_{baseline}"]
            lines.append(
                f"| {name} | {group['problems']} | {format_percent(group['correctness_rate'])} | "
                f"{format_speedup(group[f'geomean_speedup_vs_{baseline}'])} | "
                + " | ".join(format_percent(fast[_p_key(p)]) for p in FAST_P)
                + " |"
            )
        missing = metrics["overall"][f"correct_without_{baseline}_baseline"]
        if missing:
            where = (
                ' (listed, with why, under "Without a torch.compile time")' if baseline == "compile" else ""
            )
            lines.append(
                f"\n{missing} correct problem(s) have no {label} timing; they count as not fast{where}."
            )
        lines.append("")
    return lines


def summary_markdown(summary: dict[str, Any], title: str = "KernelBench sweep", header: str = "") -> str:
    lines = [f"# {title}", ""]
    if header:
        lines += [header, ""]
    lines += [
        "fast_p: share of problems (failures included) whose kernel is correct and more than p times "
        "faster than the baseline. Geomeans are over correct problems.",
        "",
    ]
    permissive = summary.get("mode") == "permissive"
    lines += [
        "Strict: each problem's best kernel that does all its work in our own kernels (what a strict run "
        "accepts)."
        + (
            " Permissive: its best kernel, which may call PyTorch's libraries (cuBLAS, cuDNN); a problem "
            f"correct only that way is `{LIBRARY_ONLY}` in the strict tables."
            if permissive
            else " This sweep ran in strict mode: no permissive results (`--permissive` adds them)."
        ),
        "",
    ]
    for mode, mode_label in MODES.items():
        metrics_of_mode = (summary.get("modes") or {}).get(mode)
        if metrics_of_mode is None and mode == "strict":  # a summary.json from before modes
            metrics_of_mode = {"overall": summary["overall"], "levels": summary["levels"]}
        if metrics_of_mode is not None:
            lines += _mode_tables(metrics_of_mode, mode_label)
    lines += rate_lines(summary.get("evaluation_rate"))
    lines += behind_lines(summary.get("furthest_behind_compile"))
    strict_cols = " strict vs eager | strict vs compile | own kernels | library time |" if permissive else ""
    lines += [
        "## Problems",
        "",
        "| problem | name | status | best ms | eager ms | compile ms | vs eager | vs compile | evals | backend | wall s |"
        + strict_cols,
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|"
        + ("---:|---:|---|---:|" if permissive else ""),
    ]
    for row in summary["problems"]:
        lines.append(
            f"| {row['problem']} | {row['name']} | {row['status']} | {format_ms(row['best_ms'])} | "
            f"{format_ms(row['eager_ms'])} | {format_ms(row['compile_ms'])} | {format_speedup(row['speedup_vs_eager'])} | "
            f"{format_speedup(row['speedup_vs_compile'])} | {row['evaluations'] or 0} | {row['winner_backend'] or '-'} | "
            f"{row['wall_s']:.0f} |"
            + (
                f" {format_speedup(row.get('strict_speedup_vs_eager'))} | "
                f"{format_speedup(row.get('strict_speedup_vs_compile'))} | "
                f"{format_own(row.get('own_kernels_only'))} | {format_percent(row.get('library_share'))} |"
                if permissive
                else ""
            )
        )
    lines += _exact_precision_table(summary["problems"])
    lines += _exact_compile_table(summary["problems"])
    lines += _host_bound_lines(summary.get("host_bound_baselines") or [])
    lines += _cuda_graph_lines(summary.get("vs_compile_with_cuda_graphs"))
    lines += _baseline_accuracy_lines(summary.get("baseline_accuracy"))
    lines += _missing_compile_lines(summary["problems"])
    lines += agreement_lines(summary.get("kernelbench_judge"))
    lines += roofline_lines(summary.get("roofline"))
    lines += precision_lines(summary.get("precision_verdicts"))
    lines += ["", "## Failures", ""]
    if summary["failures"]:
        lines += ["| problem | name | status | evals | detail |", "|---|---|---|---:|---|"]
        for failure in summary["failures"]:
            detail = failure["detail"].replace("|", "\\|")
            lines.append(
                f"| {failure['problem']} | {failure['name']} | {failure['status']} | "
                f"{failure['evaluations']} | {detail} |"
            )
    else:
        lines.append("none")
    if summary["pending"]:
        lines += ["", f"## Not run yet ({len(summary['pending'])})", "", ", ".join(summary["pending"])]
    return "\n".join(lines) + "\n"


def _missing_compile_lines(problems: list[dict[str, Any]]) -> list[str]:
    """Correct problems without a torch.compile time, with why: they count as not fast against it."""
    missing = [p for p in problems if p.get("status") == "ok" and p.get("compile_ms") is None]
    if not missing:
        return []
    lines = ["", "### Without a torch.compile time", "", "| problem | name | why |", "|---|---|---|"]
    for row in missing:
        reason = (
            row.get("compile_error")
            or "no reason recorded (not measured, or a record from before compile_error)"
        )
        why = reason.replace("|", "\\|")
        lines.append(f"| {row['problem']} | {row['name']} | {why} |")
    return lines


def write_summary(
    sweep_dir: Path, only: list[str] | None = None, into: Path | None = None, subset_name: str = ""
) -> dict[str, Any]:
    """Recompute summary.json and summary.md of a sweep folder from its result files.

    `only` (problem keys, "L1/19") summarises those problems alone, into the folder `into`: a sample's
    figures read from a larger sweep run with the same settings, named `subset_name` in the title.
    """
    manifest: dict[str, Any] = {}
    if (sweep_dir / MANIFEST).is_file():
        manifest = json.loads((sweep_dir / MANIFEST).read_text())
    records = load_records(sweep_dir)
    selected = manifest.get("selected")
    if only is not None:
        wanted = set(only)
        records = [r for r in records if r.get("problem") in wanted]
        selected = list(only)
    summary = summarize(records, selected)
    settings = manifest.get("settings", {})
    summary["settings"] = settings
    summary["evaluation_rate"] = evaluation_rate(records, gpu_share_from_settings(settings))
    finished = sorted(str(r["finished_at"]) for r in records if r.get("finished_at"))
    header = (
        f"platform {settings.get('platform', '?')}, {summary['mode']} mode, evaluator "
        f"{settings.get('evaluator', '?')}, budget "
        f"{settings.get('budget_evals', '?')} evaluations / {settings.get('budget_seconds', '?')} s per problem; "
        f"{len(summary['problems'])} problem(s) with results"
        + (f", {len(summary['pending'])} not run yet" if summary["pending"] else "")
        + "."
        + (f" Results finished {finished[0]} to {finished[-1]}." if only is not None and finished else "")
    )
    out = into or sweep_dir
    out.mkdir(parents=True, exist_ok=True)
    title = f"KernelBench sweep: {sweep_dir.name}" + (f", {subset_name}" if subset_name else "")
    _atomic_write(out / SUMMARY_JSON, json.dumps(summary, indent=2))
    _atomic_write(out / SUMMARY_MD, summary_markdown(summary, title, header))
    return summary


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
