"""A sweep's summary as Markdown (summary.md): the fast_p tables per mode and baseline, then the problems,
the baselines' accuracy and timing notes, the second judge's verdicts and the failures; `write_summary`
rewrites summary.json and summary.md from the result files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernelevolve.bench.kernelbench.judge.agreement import agreement_lines
from kernelevolve.bench.sweep.gaps import behind_lines
from kernelevolve.bench.sweep.precision import precision_lines
from kernelevolve.bench.sweep.rate import evaluation_rate, gpu_share_from_settings, rate_lines
from kernelevolve.bench.sweep.roofline import roofline_lines
from kernelevolve.bench.sweep.summary import (
    FAST_P,
    LIBRARY_ONLY,
    MANIFEST,
    MODES,
    SUMMARY_JSON,
    SUMMARY_MD,
    _p_key,
    load_records,
    metric_groups,
    summarize,
)
from kernelevolve.results.format import format_ms, format_own, format_percent, format_speedup


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
