"""Figures for the HTML reports: matplotlib (Agg backend) rendered to base64 PNG strings.

Every function takes plain data (lists and dicts read from a run or sweep folder) and returns the
PNG's base64 text, ready for ``<img src="data:image/png;base64,...">``. matplotlib is the `report`
extra; importing this module without it raises ImportError, which `kernelevolve.results.report` handles.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

from kernelevolve.results.graph_view import OTHER_COLOUR as _OTHER
from kernelevolve.results.graph_view import STATUS_COLOURS

matplotlib.use("Agg")  # no display; must precede pyplot

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

_DPI = 110


def _encode(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _log_scale_fits(values: Sequence[float]) -> bool:
    """Speedups are ratios: a log axis once they span more than 4x or include a large slow-down."""
    positive = [v for v in values if v and v > 0]
    return bool(positive) and (max(positive) / min(positive) > 4 or min(positive) < 0.25)


def fitness_over_time(evaluations: Sequence[Mapping[str, Any]]) -> str:
    """Each evaluation's objective in evaluation order (failures at the bottom), and the best so far."""
    fig, ax = plt.subplots(figsize=(8, 3.6))
    feasible = [(e["index"], e["objective"]) for e in evaluations if e.get("feasible") and e.get("objective")]
    failed = [e["index"] for e in evaluations if not e.get("feasible")]
    best: list[tuple[int, float]] = []
    running = 0.0
    for e in evaluations:
        if e.get("feasible") and (e.get("objective") or 0) > running:
            running = float(e["objective"])
        if running > 0:
            best.append((e["index"], running))
    values = [v for _, v in feasible]
    if _log_scale_fits(values):
        ax.set_yscale("log")
    floor = min(values) / 2 if values else 0.5
    if feasible:
        xs, ys = zip(*feasible, strict=True)
        ax.scatter(xs, ys, s=18, color=STATUS_COLOURS["ok"], label="correct", zorder=3)
    if failed:
        ax.scatter(
            failed, [floor] * len(failed), s=18, marker="x", color=STATUS_COLOURS["incorrect"], label="failed"
        )
    if best:
        ax.step(*zip(*best, strict=True), where="post", color="black", linewidth=1.5, label="best so far")
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("evaluation (in order of completion)")
    ax.set_ylabel("geomean speedup vs eager")
    ax.set_title("Fitness over time")
    ax.grid(alpha=0.3)
    if evaluations:
        ax.legend(loc="best", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no evaluations", ha="center", va="center", transform=ax.transAxes)
    return _encode(fig)


def shape_speedups(rows: Sequence[Mapping[str, Any]]) -> str:
    """Best kernel's speedup per shape vs eager and vs torch.compile."""
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(rows) + 2), 3.4))
    names = [str(r["shape"]) for r in rows]
    width = 0.38
    for offset, key, label, colour in (
        (-width / 2, "speedup_vs_eager", "vs eager", "#1f77b4"),
        (width / 2, "speedup_vs_compile", "vs torch.compile", "#ff7f0e"),
    ):
        values = [r.get(key) or 0.0 for r in rows]
        ax.bar([i + offset for i in range(len(rows))], values, width, label=label, color=colour)
    ax.axhline(1.0, color="black", linestyle=":", linewidth=1)
    if _log_scale_fits([r.get(k) or 0 for r in rows for k in ("speedup_vs_eager", "speedup_vs_compile")]):
        ax.set_yscale("log")
    ax.set_xticks(range(len(rows)), names, rotation=20, ha="right")
    ax.set_ylabel("speedup (x)")
    ax.set_title("Best kernel per shape")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _encode(fig)


def failures_by_operator(by_operator: Mapping[str, Mapping[str, int]]) -> str:
    """Evaluations per operator, stacked by status."""
    operators = sorted(by_operator)
    present = {s for o in operators for s, n in by_operator[o].items() if n}
    statuses = [s for s in STATUS_COLOURS if s in present] + sorted(present - set(STATUS_COLOURS))
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(operators) + 2), 3.4))
    bottoms = [0] * len(operators)
    for status in statuses:
        counts = [int(by_operator[o].get(status, 0)) for o in operators]
        ax.bar(operators, counts, bottom=bottoms, color=STATUS_COLOURS.get(status, _OTHER), label=status)
        bottoms = [b + c for b, c in zip(bottoms, counts, strict=True)]
    ax.set_ylabel("evaluations")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Evaluations by operator and status")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return _encode(fig)


def fast_p_curves(summary: Mapping[str, Any]) -> str:
    """KernelBench fast_p (share correct and faster than p x) against p, vs eager and vs torch.compile."""
    overall = summary["overall"]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for baseline, colour in (("eager", "#1f77b4"), ("compile", "#ff7f0e")):
        table = overall.get(f"fast_p_vs_{baseline}") or {}
        points = sorted((float(p), v) for p, v in table.items() if v is not None)
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", color=colour, label=f"vs {baseline}")
    ax.set_xlabel("speedup threshold p")
    ax.set_ylabel("fast_p")
    ax.set_ylim(0, 1.02)
    ax.set_title("fast_p over all problems")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _encode(fig)


def problem_speedups(problems: Sequence[Mapping[str, Any]]) -> str:
    """Speedup vs eager of every problem (failed problems as red ticks at the bottom), sorted."""
    rows = sorted(problems, key=lambda r: r.get("speedup_vs_eager") or 0.0)
    fig, ax = plt.subplots(figsize=(max(6, 0.18 * len(rows) + 3), 3.4))
    values = [r.get("speedup_vs_eager") or 0.0 for r in rows]
    colours = [STATUS_COLOURS["ok"] if v > 0 else STATUS_COLOURS["incorrect"] for v in values]
    positive = [v for v in values if v > 0]
    floor = min(positive) / 2 if positive else 0.5
    ax.bar(range(len(rows)), [v if v > 0 else floor for v in values], color=colours)
    ax.axhline(1.0, color="black", linestyle=":", linewidth=1)
    if _log_scale_fits(positive):
        ax.set_yscale("log")
    if len(rows) <= 40:
        ax.set_xticks(
            range(len(rows)), [str(r.get("problem", "")) for r in rows], rotation=60, ha="right", fontsize=7
        )
    else:
        ax.set_xticks([])
    ax.set_ylabel("speedup vs eager (x)")
    ax.set_title("Per-problem speedup (red: no correct kernel)")
    ax.legend(
        handles=[
            Line2D([0], [0], color=STATUS_COLOURS["ok"], lw=6),
            Line2D([0], [0], color=STATUS_COLOURS["incorrect"], lw=6),
        ],
        labels=["correct", "failed"],
        fontsize=8,
    )
    ax.grid(axis="y", alpha=0.3)
    return _encode(fig)
