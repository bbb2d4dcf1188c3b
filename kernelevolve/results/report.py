"""HTML reports of a run directory or a sweep folder (one self-contained report.html each).

    python -m kernelevolve.results.report RUN_DIR | SWEEP_DIR [-o report.html]

A run report shows fitness over time, the search graph, the best kernel's speedup per shape vs
eager and torch.compile, evaluations by status and operator with the commonest failure reasons,
and the best kernel's source. A sweep report renders the sweep's summary.json (correctness rate,
fast_p tables, geomeans, per-problem results). Plots are matplotlib PNGs embedded as base64 (the
`report` extra); without matplotlib the report still has every table and says what is missing.
`write_run_report(run_dir)` is what a search calls at its end.
"""

from __future__ import annotations

import argparse
import html
import json
import logging
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelevolve.bench.sweep.summary import MODES, metric_groups
from kernelevolve.results.format import format_ms as _ms
from kernelevolve.results.format import format_own
from kernelevolve.results.format import format_percent as _pct
from kernelevolve.results.format import format_speedup as _x

log = logging.getLogger(__name__)

REPORT_FILE = "report.html"
_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.8em;overflow-x:auto;font-size:.82em}
img{max-width:100%;margin:.5em 0}.note{color:#777;font-size:.9em}
"""


class ReportError(ValueError):
    """The folder is neither a run directory nor a sweep folder."""


# ------------------------------------------------------------------------------------------ html


def _e(value: Any) -> str:
    return html.escape(str(value))


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _page(title: str, sections: Sequence[str]) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{_e(title)}</h1>" + "\n".join(sections) + "</body></html>\n"
    )


def _plots() -> Any:
    try:
        from kernelevolve.results import report_plots
    except ImportError as exc:
        log.warning("report without plots: %s (install the `report` extra: matplotlib)", exc)
        return None
    return report_plots


def _figure(plots: Any, draw: Callable[[Any], str], alt: str) -> str:
    if plots is None:
        return f"<p class='note'>[{_e(alt)}: plots need matplotlib, the `report` extra]</p>"
    try:
        return f"<img alt='{_e(alt)}' src='data:image/png;base64,{draw(plots)}'>"
    except Exception as exc:  # a broken plot must not cost the rest of the report
        log.warning("plot %r failed: %s", alt, exc, exc_info=True)
        return f"<p class='note'>[{_e(alt)} failed: {_e(type(exc).__name__)}: {_e(exc)}]</p>"


def _write(path: Path, text: str) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


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


# ------------------------------------------------------------------------------------------ sweeps


def _sweep_summary(sweep: Path) -> dict[str, Any]:
    path = sweep / "summary.json"
    if path.is_file():
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    if (sweep / "results").is_dir():
        from kernelevolve.bench.sweep.summary import load_records, summarize

        return summarize(load_records(sweep))
    raise ReportError(f"{sweep}: no summary.json and no results/ folder (not a sweep folder)")


_PERMISSIVE_COLUMNS = ("strict vs eager", "strict vs compile", "own kernels", "library time")


def _permissive_cells(row: Mapping[str, Any]) -> list[str]:
    """A permissive sweep's problem row: the strict winner's speedups and how the winner runs."""
    return [
        _x(row.get("strict_speedup_vs_eager")),
        _x(row.get("strict_speedup_vs_compile")),
        format_own(row.get("own_kernels_only")),
        _pct(row.get("library_share")),
    ]


def _mode_sections(metrics: Mapping[str, Any], mode_label: str, fast_p: Sequence[str]) -> list[str]:
    groups = metric_groups(metrics)
    return [
        f"<h2>{_e(mode_label[0].upper() + mode_label[1:])}: against {label}</h2>"
        + _table(
            ["group", "correct", "geomean speedup", *(f"fast_{p}" for p in fast_p)],
            [
                [
                    name,
                    _pct(m.get("correctness_rate")),
                    _x(m.get(f"geomean_speedup_vs_{baseline}")),
                    *(_pct((m.get(f"fast_p_vs_{baseline}") or {}).get(p)) for p in fast_p),
                ]
                for name, m in groups
            ],
        )
        for baseline, label in (("eager", "PyTorch eager"), ("compile", "torch.compile"))
    ]


def render_sweep_report(sweep_dir: Path | str) -> str:
    sweep = Path(sweep_dir)
    summary = _sweep_summary(sweep)
    plots = _plots()
    fast_p = [f"{p:g}" for p in summary.get("fast_p", [])]
    # strict (own kernels only) always, permissive when the sweep ran in permissive mode
    modes = summary.get("modes") or {
        "strict": {"overall": summary["overall"], "levels": summary.get("levels")}
    }
    groups = [
        (f"{name} ({mode})" if len(modes) > 1 else name, metrics)
        for mode, metrics_of_mode in modes.items()
        for name, metrics in metric_groups(metrics_of_mode)
    ]
    settings = summary.get("settings") or {}
    sections = []
    if settings:
        sections.append(
            "<h2>Settings</h2>" + _table(["setting", "value"], sorted((k, v) for k, v in settings.items()))
        )
    sections.append(
        "<h2>Correctness</h2>"
        + _table(
            ["group", "problems", "correct", "correctness rate", "statuses"],
            [
                [
                    name,
                    m["problems"],
                    m["correct"],
                    _pct(m.get("correctness_rate")),
                    ", ".join(f"{k}={v}" for k, v in sorted((m.get("statuses") or {}).items())),
                ]
                for name, m in groups
            ],
        )
    )
    for mode, mode_label in MODES.items():
        if mode in modes:
            sections += _mode_sections(modes[mode], mode_label, fast_p)
    sections.append("<h2>fast_p</h2>" + _figure(plots, lambda p: p.fast_p_curves(summary), "fast_p curves"))
    problems = summary.get("problems") or []
    permissive = summary.get("mode") == "permissive"
    if problems:
        sections.append(
            "<h2>Problems</h2>"
            + _figure(plots, lambda p: p.problem_speedups(problems), "per-problem speedup")
            + _table(
                [
                    "problem",
                    "name",
                    "status",
                    "best ms",
                    "eager ms",
                    "compile ms",
                    "vs eager",
                    "vs compile",
                    "evals",
                    *(_PERMISSIVE_COLUMNS if permissive else ()),
                ],
                [
                    [
                        r.get("problem"),
                        r.get("name"),
                        r.get("status"),
                        _ms(r.get("best_ms")),
                        _ms(r.get("eager_ms")),
                        _ms(r.get("compile_ms")),
                        _x(r.get("speedup_vs_eager")),
                        _x(r.get("speedup_vs_compile")),
                        r.get("evaluations") or 0,
                        *(_permissive_cells(r) if permissive else ()),
                    ]
                    for r in problems
                ],
            )
        )
    failures = summary.get("failures") or []
    if failures:
        sections.append(
            "<h2>Failures</h2>"
            + _table(
                ["problem", "name", "status", "evals", "detail"],
                [
                    [f["problem"], f.get("name"), f["status"], f.get("evaluations", 0), f.get("detail", "")]
                    for f in failures
                ],
            )
        )
    if summary.get("pending"):
        sections.append(
            f"<h2>Not run yet ({len(summary['pending'])})</h2><p>{_e(', '.join(summary['pending']))}</p>"
        )
    return _page(f"kernelevolve sweep: {sweep.name}", sections)


def write_sweep_report(sweep_dir: Path | str, output: Path | str | None = None) -> Path:
    """Write report.html into the sweep folder (or `output`) from its summary.json; returns its path."""
    sweep = Path(sweep_dir)
    return _write(Path(output) if output else sweep / REPORT_FILE, render_sweep_report(sweep))


def write_report(folder: Path | str, output: Path | str | None = None) -> Path:
    """A run directory (results.json) or a sweep folder (summary.json / results/) -> its report."""
    path = Path(folder)
    if (path / "results.json").is_file():
        return write_run_report(path, output)
    if (path / "summary.json").is_file() or (path / "results").is_dir():
        return write_sweep_report(path, output)
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
