"""A sweep folder's report.html (Jinja2, `results/templates/sweep_report.html.j2`), from its summary.json
and records: correctness rate, fast_p tables and geomeans, a sortable table of the problems linking each
to its run's report (written where missing, when the run directory is here), every problem's candidates,
and the versions its runs recorded. `python -m kernelevolve.results.report SWEEP_DIR` finds it through
the entry point group `kernelevolve.reports` (`write_folder_report`)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelevolve.bench.sweep.summary import MODES, metric_groups
from kernelevolve.results.format import format_percent as _pct
from kernelevolve.results.format import format_speedup as _x
from kernelevolve.results.html import figure as _figure
from kernelevolve.results.html import load_plots as _plots
from kernelevolve.results.html import write_atomic as _write
from kernelevolve.results.report import REPORT_FILE, ReportError, write_run_report
from kernelevolve.results.templating import render
from kernelevolve.results.versions import versions


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


def _mode_sections(
    metrics: Mapping[str, Any], mode_label: str, fast_p: Sequence[str]
) -> list[dict[str, Any]]:
    groups = metric_groups(metrics)
    return [
        {
            "title": f"{mode_label[0].upper() + mode_label[1:]}: against {label}",
            "rows": [
                [
                    name,
                    _pct(m.get("correctness_rate")),
                    _x(m.get(f"geomean_speedup_vs_{baseline}")),
                    *(_pct((m.get(f"fast_p_vs_{baseline}") or {}).get(p)) for p in fast_p),
                ]
                for name, m in groups
            ],
        }
        for baseline, label in (("eager", "PyTorch eager"), ("compile", "torch.compile"))
    ]


def _records(sweep: Path) -> dict[str, dict[str, Any]]:
    if not (sweep / "results").is_dir():
        return {}
    from kernelevolve.bench.sweep.summary import load_records

    return {str(r.get("problem")): r for r in load_records(sweep)}


def _run_href(record: Mapping[str, Any], report_dir: Path) -> str | None:
    """The problem's run report, relative to the sweep report, where its run directory is here."""
    run_dir = record.get("run_dir")
    if not run_dir or not (Path(str(run_dir)) / "results.json").is_file():
        return None
    report = Path(str(run_dir)) / REPORT_FILE
    if not report.is_file():
        try:
            write_run_report(Path(str(run_dir)))
        except (OSError, ValueError):
            return None
    return Path(os.path.relpath(report.resolve(), report_dir.resolve())).as_posix()


def _versions(records: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, str], str]:
    """The versions the sweep's runs recorded (several values where runs differed), or this machine's."""
    seen: dict[str, list[str]] = {}
    for record in records.values():
        for name, version in (record.get("versions") or {}).items():
            if version not in seen.setdefault(name, []):
                seen[name].append(str(version))
    if seen:
        return {k: " / ".join(v) for k, v in seen.items()}, "as recorded by the sweep's runs"
    return versions(), "at report time (the sweep's records carry none)"


def render_sweep_report(sweep_dir: Path | str, report_dir: Path | None = None) -> str:
    from markupsafe import Markup

    sweep = Path(sweep_dir)
    summary = _sweep_summary(sweep)
    records = _records(sweep)
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
    sections = [
        section
        for mode, mode_label in MODES.items()
        if mode in modes
        for section in _mode_sections(modes[mode], mode_label, fast_p)
    ]
    problems = []
    for order, row in enumerate(summary.get("problems") or []):
        record = records.get(str(row.get("problem")), {})
        problems.append(
            {
                **{k: None for k in ("roofline_fraction", "own_kernels_only", "library_share")},
                **{k: None for k in ("strict_speedup_vs_eager", "strict_speedup_vs_compile")},
                **row,
                "order": order,
                "roofline_fraction": row.get("roofline_fraction", record.get("roofline_fraction")),
                "run_dir": record.get("run_dir"),
                "run_href": _run_href(record, report_dir or sweep),
            }
        )
    version_table, note = _versions(records)
    return render(
        "sweep_report.html.j2",
        title=f"kernelevolve sweep: {sweep.name}",
        settings=sorted((summary.get("settings") or {}).items()),
        groups=groups,
        mode_sections=sections,
        fast_p=fast_p,
        fast_p_figure=Markup(_figure(plots, lambda p: p.fast_p_curves(summary), "fast_p curves")),
        problems=problems,
        problems_figure=Markup(_figure(plots, lambda p: p.problem_speedups(problems), "per-problem speedup"))
        if problems
        else "",
        permissive=summary.get("mode") == "permissive",
        failures=summary.get("failures") or [],
        pending=summary.get("pending") or [],
        candidates=[(key, r["candidates"]) for key, r in records.items() if r.get("candidates")],
        versions=version_table,
        versions_note=note,
    )


def write_sweep_report(sweep_dir: Path | str, output: Path | str | None = None) -> Path:
    """Write report.html into the sweep folder (or `output`) from its summary.json; returns its path."""
    sweep = Path(sweep_dir)
    path = Path(output) if output else sweep / REPORT_FILE
    return _write(path, render_sweep_report(sweep, path.parent))
