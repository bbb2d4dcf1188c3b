"""HTML reports of a run directory or a sweep folder (one self-contained report.html each).

    python -m kernelevolve.results.report RUN_DIR | SWEEP_DIR [-o report.html]

A run report (Jinja2, `templates/run_report.html.j2`) shows the overview, the winner beside the
reference (per-shape times and speedups vs eager and torch.compile, both sources side by side), its
roofline position, the search graph (SVG: candidates labelled, edges named by operator, pan, zoom and
hover), a sortable table of every candidate, evaluations by status and operator with the commonest
failures, and the versions the run ran with. Other folders go to report plug-ins (`FOLDER_REPORTS`): a
sweep folder's report is the bench's (bench/sweep/report.py). Static charts are matplotlib PNGs
embedded as base64 (the `report` extra); without matplotlib the report still has every table and the
graph, and says what is missing.
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

from kernelevolve.eval.roofline import fraction
from kernelevolve.registry import PluginUnavailableError, Registry
from kernelevolve.results.format import first_line
from kernelevolve.results.format import format_ms as _ms
from kernelevolve.results.format import format_percent as _pct
from kernelevolve.results.format import format_speedup as _x
from kernelevolve.results.graph_view import layout
from kernelevolve.results.html import figure as _figure
from kernelevolve.results.html import load_plots as _plots
from kernelevolve.results.html import write_atomic as _write
from kernelevolve.results.templating import render
from kernelevolve.results.versions import versions

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


def _candidate_rows(
    candidates: Mapping[str, Any], reports: Sequence[Mapping[str, Any]], best_id: str | None
) -> list[dict[str, Any]]:
    """One row per evaluation, in evaluation order, for the sortable candidate table."""
    rows = []
    for index, record in enumerate(reports, start=1):
        report = record.get("report") or {}
        fitness = record.get("fitness") or {}
        candidate = candidates.get(record["id"], {})
        rows.append(
            {
                "index": index,
                "id": record["id"],
                "best": record["id"] == best_id,
                "operator": candidate.get("operator", "?"),
                "mode": candidate.get("mode", ""),
                "backend": candidate.get("backend", ""),
                "parents": [p[:10] for p in candidate.get("parent_ids") or []],
                "status": report.get("status", "?"),
                "error_name": report.get("error_name", ""),
                "feedback": first_line(report.get("feedback", "")),
                "speedup_vs_eager": fitness.get("objective") if fitness.get("feasible") else None,
                "speedup_vs_compile": fitness.get("speedup_vs_compile") if fitness.get("feasible") else None,
                "ms": {k: (v or {}).get("median_ms") for k, v in (report.get("latency") or {}).items()},
                "max_abs_error": report.get("max_abs_error"),
                "wall_s": report.get("wall_s"),
            }
        )
    return rows


def _roofline_rows(results: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    floors = results.get("roofline_floor_ms") or {}
    out = []
    for row in rows:
        floor = floors.get(row["shape"])
        if floor is None:
            continue
        best, eager = fraction(floor, row.get("best_ms")), fraction(floor, row.get("eager_ms"))
        out.append(
            {
                "shape": row["shape"],
                "floor_ms": floor,
                "best_ms": row.get("best_ms"),
                "eager_ms": row.get("eager_ms"),
                "best_fraction": best,
                "eager_fraction": eager,
                "best_width": round(100 * min(best or 0.0, 1.0), 1),
                "eager_width": round(100 * min(eager or 0.0, 1.0), 1),
            }
        )
    return out


def _reference_source(run: Path) -> str | None:
    path = run / "spec.json"
    if not path.is_file():
        return None
    source = json.loads(path.read_text()).get("reference_source")
    return str(source) if source else None


def render_run_report(run_dir: Path | str) -> str:
    """The run report's HTML (run_dir must hold results.json)."""
    from markupsafe import Markup

    run = Path(run_dir)
    if not (run / "results.json").is_file():
        raise ReportError(f"{run}: no results.json (not a finished kernelevolve run directory)")
    results = json.loads((run / "results.json").read_text())
    candidates, reports = read_checkpoint(run / "graph.jsonl")
    evaluations = _evaluations(candidates, reports)
    best = results.get("best") or {}
    plots = _plots()
    spec = results.get("spec", {})
    overview = [
        ["spec", f"{spec.get('name')} ({spec.get('origin', '')}), key {spec.get('key', '')}"],
        ["dtype / tolerance", f"{spec.get('dtype')} atol {spec.get('atol')} rtol {spec.get('rtol')}"],
        ["shapes", ", ".join(f"{s['name']} {s.get('params', {})}" for s in spec.get("shapes", []))],
        ["platform", results.get("platform")],
        ["evaluations", f"{results.get('evaluations')} ({results.get('candidates')} candidates)"],
        ["stopped", results.get("stop_reason", "")],
        ["wall time", f"{(results.get('time') or {}).get('wall_s', 0):.1f} s"],
        ["best kernel", best.get("id", "none found")],
    ]
    rows = best.get("shapes", [])
    params = {s["name"]: s.get("params", {}) for s in spec.get("shapes", [])}
    by_operator = results.get("evaluations_by_operator") or {}
    source = None
    if best:
        source = (candidates.get(best["id"]) or {}).get("source")
        if source is None and (run / "best" / "kernel.py").is_file():
            source = (run / "best" / "kernel.py").read_text()
    recorded = results.get("versions")
    context = {
        "title": f"kernelevolve run: {spec.get('name', run.name)} on {results.get('platform', '?')}",
        "overview": overview,
        "kernel_use": _kernel_use_rows(best, results.get("best_strict")) if best else [],
        "best": best,
        "platform": results.get("platform", "?"),
        "shape_rows": [{**r, "params": params.get(r["shape"], {})} for r in rows],
        "speedup_figure": Markup(_figure(plots, lambda p: p.shape_speedups(rows), "speedup per shape"))
        if rows
        else "",
        "spec_origin": spec.get("origin", ""),
        "reference_source": _reference_source(run),
        "winner_source": source,
        "roofline": _roofline_rows(results, rows),
        "graph": layout(_graph_export(run), best.get("id")),
        "fitness_figure": Markup(
            _figure(plots, lambda p: p.fitness_over_time(evaluations), "fitness over time")
        ),
        "candidates": _candidate_rows(candidates, reports, best.get("id")),
        "shape_names": [s["name"] for s in spec.get("shapes", [])],
        "by_status": sorted(
            ((k, v) for k, v in (results.get("evaluations_by_status") or {}).items() if v),
            key=lambda kv: -kv[1],
        ),
        "statuses": sorted({s for counts in by_operator.values() for s in counts}),
        "by_operator": sorted(by_operator.items()),
        "operator_figure": Markup(
            _figure(plots, lambda p: p.failures_by_operator(by_operator), "evaluations by operator")
        )
        if by_operator
        else "",
        "reasons": _failure_reasons(evaluations),
        "compile_errors": [
            (k, v["compile_error"])
            for k, v in (results.get("baselines") or {}).items()
            if v.get("compile_error")
        ],
        "versions": recorded or versions(),
        "versions_note": "as recorded by the run" if recorded else "at report time (the run recorded none)",
    }
    return render("run_report.html.j2", **context)


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
