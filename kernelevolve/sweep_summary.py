"""A sweep's results in KernelBench's terms: correctness rate, fast_p and geomean speedups.

fast_p is the fraction of problems whose kernel is correct AND faster than the baseline by more
than a factor p (KernelBench's metric); the denominator is every problem with a result, failures
included. Geomean speedups are over the correct problems only. Everything is computed per level
and overall, against PyTorch eager and against torch.compile. `summarize` works on plain result
records (as written by `kernelevolve.sweep`), so the HTML report can call it too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

FAST_P = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
BASELINES = ("eager", "compile")
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


def _geomean(values: Iterable[float]) -> float | None:
    kept = [v for v in values if v and v > 0]
    if not kept:
        return None
    return math.exp(sum(math.log(v) for v in kept) / len(kept))


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
        out[f"geomean_speedup_vs_{baseline}"] = _geomean(known)
        out[f"correct_without_{baseline}_baseline"] = len(speedups) - len(known)
        out[f"fast_p_vs_{baseline}"] = {
            _p_key(p): (sum(1 for s in known if s > p) / total if total else None) for p in FAST_P
        }
    return out


def _p_key(p: float) -> str:
    return f"{p:g}"


def summarize(records: list[dict[str, Any]], selected: list[str] | None = None) -> dict[str, Any]:
    """Overall and per-level metrics, the failures, and which selected problems have no result yet."""
    levels = sorted({int(r["level"]) for r in records})
    done = {r["problem"] for r in records}
    return {
        "fast_p": list(FAST_P),
        "overall": group_metrics(records),
        "levels": {
            str(level): group_metrics([r for r in records if int(r["level"]) == level]) for level in levels
        },
        "failures": [
            {
                "problem": r["problem"],
                "name": r.get("name", ""),
                "status": r["status"],
                "detail": _first_line(r.get("error") or r.get("stop_reason") or ""),
                "evaluations": r.get("evaluations", 0),
            }
            for r in records
            if not r.get("correct")
        ],
        "pending": [key for key in (selected or []) if key not in done],
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
                    "speedup_vs_eager",
                    "speedup_vs_compile",
                    "evaluations",
                    "winner_backend",
                    "wall_s",
                )
            }
            for r in records
        ],
    }


def _first_line(text: str) -> str:
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return lines[0][:200] if lines else ""


def format_percent(value: float | None) -> str:
    return f"{100 * value:.0f}%" if value is not None else "-"


def format_speedup(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" if value >= 0.1 else f"{value:.2g}x"


def format_ms(value: float | None) -> str:
    return f"{value:.4g}" if value is not None else "-"


def summary_markdown(summary: dict[str, Any], title: str = "KernelBench sweep", header: str = "") -> str:
    groups = [("overall", summary["overall"])] + [(f"level {k}", v) for k, v in summary["levels"].items()]
    lines = [f"# {title}", ""]
    if header:
        lines += [header, ""]
    lines += [
        "fast_p: share of problems (failures included) whose kernel is correct and more than p times "
        "faster than the baseline. Geomeans are over correct problems.",
        "",
    ]
    p_cols = " | ".join(f"fast_{_p_key(p)}" for p in FAST_P)
    for baseline, label in (("eager", "PyTorch eager"), ("compile", "torch.compile")):
        lines += [
            f"## Against {label}",
            "",
            f"| group | problems | correct | geomean speedup | {p_cols} |",
            "|---|---:|---:|---:|" + "---:|" * len(FAST_P),
        ]
        for name, metrics in groups:
            fast = metrics[f"fast_p_vs_{baseline}"]
            lines.append(
                f"| {name} | {metrics['problems']} | {format_percent(metrics['correctness_rate'])} | "
                f"{format_speedup(metrics[f'geomean_speedup_vs_{baseline}'])} | "
                + " | ".join(format_percent(fast[_p_key(p)]) for p in FAST_P)
                + " |"
            )
        missing = summary["overall"][f"correct_without_{baseline}_baseline"]
        if missing:
            lines.append(f"\n{missing} correct problem(s) have no {label} timing; they count as not fast.")
        lines.append("")
    lines += [
        "## Problems",
        "",
        "| problem | name | status | best ms | eager ms | compile ms | vs eager | vs compile | evals | backend | wall s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for row in summary["problems"]:
        lines.append(
            f"| {row['problem']} | {row['name']} | {row['status']} | {format_ms(row['best_ms'])} | "
            f"{format_ms(row['eager_ms'])} | {format_ms(row['compile_ms'])} | {format_speedup(row['speedup_vs_eager'])} | "
            f"{format_speedup(row['speedup_vs_compile'])} | {row['evaluations'] or 0} | {row['winner_backend'] or '-'} | "
            f"{row['wall_s']:.0f} |"
        )
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


def write_summary(sweep_dir: Path) -> dict[str, Any]:
    """Recompute summary.json and summary.md of a sweep folder from its result files."""
    manifest: dict[str, Any] = {}
    if (sweep_dir / MANIFEST).is_file():
        manifest = json.loads((sweep_dir / MANIFEST).read_text())
    summary = summarize(load_records(sweep_dir), manifest.get("selected"))
    settings = manifest.get("settings", {})
    summary["settings"] = settings
    header = (
        f"platform {settings.get('platform', '?')}, evaluator {settings.get('evaluator', '?')}, budget "
        f"{settings.get('budget_evals', '?')} evaluations / {settings.get('budget_seconds', '?')} s per problem; "
        f"{len(summary['problems'])} problem(s) with results"
        + (f", {len(summary['pending'])} not run yet" if summary["pending"] else "")
        + "."
    )
    _atomic_write(sweep_dir / SUMMARY_JSON, json.dumps(summary, indent=2))
    _atomic_write(
        sweep_dir / SUMMARY_MD, summary_markdown(summary, f"KernelBench sweep: {sweep_dir.name}", header)
    )
    return summary


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
