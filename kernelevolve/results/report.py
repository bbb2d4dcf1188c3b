"""HTML reports of a run directory or a sweep folder (one self-contained report.html each).

    python -m kernelevolve.results.report RUN_DIR | SWEEP_DIR [-o report.html]

A run report shows fitness over time, the search graph, the best kernel's speedup per shape vs
eager and torch.compile, evaluations by status and operator with the commonest failure reasons,
and the best kernel's source. Other folders go to report plug-ins (`FOLDER_REPORTS`): a sweep folder's
report is the bench's (bench/sweep/report.py). Plots are matplotlib PNGs embedded as base64 (the
`report` extra); without matplotlib the report still has every table and says what is missing.
`write_run_report(run_dir)` is what a search calls at its end.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelevolve.registry import PluginUnavailableError, Registry
from kernelevolve.results.format import format_ms as _ms
from kernelevolve.results.format import format_percent as _pct
from kernelevolve.results.format import format_speedup as _x
from kernelevolve.results.html import escape as _e
from kernelevolve.results.html import figure as _figure
from kernelevolve.results.html import load_plots as _plots
from kernelevolve.results.html import page as _page
from kernelevolve.results.html import table as _table
from kernelevolve.results.html import write_atomic as _write

log = logging.getLogger(__name__)

REPORT_FILE = "report.html"
# Reports of other folders than run directories (the bench's sweeps): name -> writer(folder, output), which
# returns the report's path, or None where the folder is not of its kind. Entry point group kernelevolve.reports.
FOLDER_REPORTS: Registry[Path | None] = Registry("folder report", group="kernelevolve.reports")


class ReportError(ValueError):
    """The folder is neither a run directory nor a sweep folder."""


# ------------------------------------------------------------------------------------------ runs


def read_checkpoint(path: Path) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """(candidates by id, reports in the order they were recorded) from graph.jsonl, read-only."""
    candidates: dict[str, dict[str, Any]] = {}
    reports: list[dict[str, Any]] = []
    if not path.is_file():
        return candidates, reports
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line from a killed run
        if record.get("type") == "candidate":
            candidates[record["id"]] = record
        elif record.get("type") == "report":
            reports.append(record)
    return candidates, reports


def _evaluations(candidates: Mapping[str, Any], reports: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for index, record in enumerate(reports, start=1):
        fitness = record.get("fitness") or {}
        report = record.get("report") or {}
        candidate = candidates.get(record["id"], {})
        out.append(
            {
                "index": index,
                "id": record["id"],
                "operator": candidate.get("operator", "?"),
                "status": report.get("status", "?"),
                "error_name": report.get("error_name", ""),
                "feedback": report.get("feedback", ""),
                "feasible": bool(fitness.get("feasible")),
                "objective": fitness.get("objective"),
                "speedup_vs_compile": fitness.get("speedup_vs_compile"),
            }
        )
    return out


def _graph_export(run: Path) -> dict[str, Any]:
    path = run / "graph_export.json"
    if path.is_file():
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    from kernelevolve.search.graph import SearchGraph

    return SearchGraph.load(run / "graph.jsonl").export() if (run / "graph.jsonl").is_file() else {}


def _failure_reasons(evaluations: Sequence[Mapping[str, Any]], limit: int = 12) -> list[list[Any]]:
    counts: Counter[tuple[str, str]] = Counter()
    example: dict[tuple[str, str], str] = {}
    for e in evaluations:
        if e["status"] == "ok":
            continue
        key = (e["status"], e["error_name"] or "-")
        counts[key] += 1
        lines = [ln.strip() for ln in str(e["feedback"]).splitlines() if ln.strip()]
        example.setdefault(key, lines[-1][:160] if lines else "")
    return [[s, n, c, example[(s, n)]] for (s, n), c in counts.most_common(limit)]


def _kernel_use_rows(best: Mapping[str, Any], strict: Mapping[str, Any] | None) -> list[list[str]]:
    """Whether the winner calls PyTorch's libraries, the best that does not, and the GPU time split."""
    if "own_kernels_only" not in best:  # results.json from before these fields
        return []
    rows = [["best: own kernels only", "yes" if best["own_kernels_only"] else "no (calls PyTorch libraries)"]]
    if not best["own_kernels_only"]:
        rows.append(
            [
                "best with own kernels only",
                f"{strict['id']}: {_x(strict.get('speedup_vs_eager'))} vs eager, "
                f"{_x(strict.get('speedup_vs_compile'))} vs torch.compile"
                if strict
                else "none",
            ]
        )
    split = best.get("time_split")
    if split:
        rows.append(
            [
                "best: GPU time per call",
                ", ".join(
                    f"{part} {_ms(split.get(f'{part}_ms'))} ms ({_pct(split.get(f'{part}_share'))})"
                    for part in ("own", "library", "other")
                ),
            ]
        )
    return rows


def render_run_report(run_dir: Path | str) -> str:
    """The run report's HTML (run_dir must hold results.json)."""
    run = Path(run_dir)
    if not (run / "results.json").is_file():
        raise ReportError(f"{run}: no results.json (not a finished kernelevolve run directory)")
    results = json.loads((run / "results.json").read_text())
    candidates, reports = read_checkpoint(run / "graph.jsonl")
    evaluations = _evaluations(candidates, reports)
    best = results.get("best") or {}
    plots = _plots()
    spec = results.get("spec", {})
    shapes = ", ".join(f"{s['name']} {s.get('params', {})}" for s in spec.get("shapes", []))
    overview = [
        ["spec", f"{spec.get('name')} ({spec.get('origin', '')}), key {spec.get('key', '')}"],
        ["dtype / tolerance", f"{spec.get('dtype')} atol {spec.get('atol')} rtol {spec.get('rtol')}"],
        ["shapes", shapes],
        ["platform", results.get("platform")],
        ["evaluations", f"{results.get('evaluations')} ({results.get('candidates')} candidates)"],
        ["stopped", results.get("stop_reason", "")],
        ["wall time", f"{(results.get('time') or {}).get('wall_s', 0):.1f} s"],
        ["best kernel", best.get("id", "none found")],
    ]
    if best:
        overview += [
            ["best: made by", f"{best.get('operator')} / {best.get('mode')} ({best.get('backend')})"],
            [
                "best: geomean speedup",
                f"{_x(best.get('speedup_vs_eager'))} vs eager, "
                f"{_x(best.get('speedup_vs_compile'))} vs torch.compile",
            ],
        ]
        overview += _kernel_use_rows(best, results.get("best_strict"))
    sections = ["<h2>Overview</h2>" + _table(["", ""], overview)]
    sections.append(
        "<h2>Fitness over time</h2>"
        + _figure(plots, lambda p: p.fitness_over_time(evaluations), "fitness over time")
    )
    export = _graph_export(run)
    sections.append(
        "<h2>Search graph</h2>"
        + _figure(plots, lambda p: p.search_graph(export, best.get("id")), "search graph")
    )
    if best:
        rows = best.get("shapes", [])
        table = _table(
            ["shape", "kernel ms", "eager ms", "compile ms", "vs eager", "vs torch.compile"],
            [
                [
                    r["shape"],
                    _ms(r.get("best_ms")),
                    _ms(r.get("eager_ms")),
                    _ms(r.get("compile_ms")),
                    _x(r.get("speedup_vs_eager")),
                    _x(r.get("speedup_vs_compile")),
                ]
                for r in rows
            ],
        )
        sections.append(
            f"<h2>Best kernel per shape ({_e(best.get('id'))})</h2>"
            + table
            + _figure(plots, lambda p: p.shape_speedups(rows), "speedup per shape")
        )
    compile_errors = {
        k: v.get("compile_error")
        for k, v in (results.get("baselines") or {}).items()
        if v.get("compile_error")
    }
    if compile_errors:
        sections.append(
            "<h2>torch.compile baseline failures</h2>"
            + _table(
                ["shape", "error"], [[k, v.splitlines()[0] if v else ""] for k, v in compile_errors.items()]
            )
        )
    by_status = {k: v for k, v in (results.get("evaluations_by_status") or {}).items() if v}
    by_operator = results.get("evaluations_by_operator") or {}
    statuses = sorted({s for counts in by_operator.values() for s in counts})
    sections.append(
        "<h2>Evaluations by status and operator</h2>"
        + _table(["status", "evaluations"], sorted(by_status.items(), key=lambda kv: -kv[1]))
        + _table(
            ["operator", *statuses],
            [[op, *(c.get(s, 0) for s in statuses)] for op, c in sorted(by_operator.items())],
        )
        + (
            _figure(plots, lambda p: p.failures_by_operator(by_operator), "evaluations by operator")
            if by_operator
            else ""
        )
    )
    reasons = _failure_reasons(evaluations)
    if reasons:
        sections.append(
            "<h2>Commonest failures</h2>"
            + _table(["status", "error", "count", "last line of feedback"], reasons)
        )
    if best:
        source = (candidates.get(best["id"]) or {}).get("source")
        if source is None and (run / "best" / "kernel.py").is_file():
            source = (run / "best" / "kernel.py").read_text()
        sections.append(
            f"<h2>Best kernel source ({_e(best['id'])})</h2><pre>{_e(source or '(not found)')}</pre>"
        )
    return _page(
        f"kernelevolve run: {spec.get('name', run.name)} on {results.get('platform', '?')}", sections
    )


def write_run_report(run_dir: Path | str, output: Path | str | None = None) -> Path:
    """Write report.html into the run directory (or `output`); returns its path."""
    run = Path(run_dir)
    return _write(Path(output) if output else run / REPORT_FILE, render_run_report(run))


def write_report(folder: Path | str, output: Path | str | None = None) -> Path:
    """A run directory (results.json) or a folder a report plug-in knows (a sweep's) -> its report."""
    path = Path(folder)
    if (path / "results.json").is_file():
        return write_run_report(path, output)
    for name in FOLDER_REPORTS.names():
        try:
            written = FOLDER_REPORTS.get(name)(path, output)
        except PluginUnavailableError as exc:
            log.warning("%s", exc)
            continue
        if written is not None:
            return written
    raise ReportError(f"{path}: neither a run directory (results.json) nor a sweep folder (summary.json)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernelevolve.results.report", description="Write report.html"
    )
    parser.add_argument("folder", type=Path, help="a run directory or a sweep folder")
    parser.add_argument("-o", "--output", type=Path, default=None, help="default: FOLDER/report.html")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        path = write_report(args.folder, args.output)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
