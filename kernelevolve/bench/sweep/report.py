"""A sweep folder's report.html, from its summary.json (correctness rate, fast_p tables, geomeans,
per-problem results): `python -m kernelevolve.results.report SWEEP_DIR` finds it through the entry point
group `kernelevolve.reports` (`write_folder_report`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelevolve.bench.sweep.summary import MODES, metric_groups
from kernelevolve.results.format import format_ms as _ms
from kernelevolve.results.format import format_own
from kernelevolve.results.format import format_percent as _pct
from kernelevolve.results.format import format_speedup as _x
from kernelevolve.results.html import escape as _e
from kernelevolve.results.html import figure as _figure
from kernelevolve.results.html import load_plots as _plots
from kernelevolve.results.html import page as _page
from kernelevolve.results.html import table as _table
from kernelevolve.results.html import write_atomic as _write
from kernelevolve.results.report import REPORT_FILE, ReportError


def write_folder_report(folder: Path, output: Path | str | None = None) -> Path | None:
    """The report of a sweep folder (summary.json or results/); None for any other folder."""
    if (folder / "summary.json").is_file() or (folder / "results").is_dir():
        return write_sweep_report(folder, output)
    return None


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
