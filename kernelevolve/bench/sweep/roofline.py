"""The sweep summary's "how close to the limit" section: per mode and level, the median fraction of its
roofline floor (`kernelevolve.eval.roofline`) that the problems' winners reach."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any


def roofline_summary(views: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Mode -> level ("overall" too) -> {problems, median} over the correct winners that have a fraction."""
    summary: dict[str, Any] = {}
    for mode, records in views.items():
        levels = sorted({int(r["level"]) for r in records})
        groups = [("overall", records)] + [
            (f"level {level}", [r for r in records if int(r["level"]) == level]) for level in levels
        ]
        summary[mode] = {name: _median(group) for name, group in groups}
    return summary


def _median(records: list[dict[str, Any]]) -> dict[str, Any]:
    fractions = [
        float(r["roofline_fraction"])
        for r in records
        if r.get("correct") and isinstance(r.get("roofline_fraction"), (int, float))
    ]
    return {"problems": len(fractions), "median": statistics.median(fractions) if fractions else None}


def roofline_lines(summary: Mapping[str, Any] | None) -> list[str]:
    if not summary or not any(g["problems"] for groups in summary.values() for g in groups.values()):
        return []
    lines = [
        "",
        "## Against the roofline floor",
        "",
        "The least time any kernel could take (the reference's bytes and matmul/convolution FLOPs at the "
        "platform's peaks for the spec's dtype) over the winner's time: 100% is the limit.",
        "",
        "| mode | group | problems | median of the floor |",
        "|---|---|---:|---:|",
    ]
    for mode, groups in summary.items():
        for name, group in groups.items():
            median = "-" if group["median"] is None else f"{100 * group['median']:.1f}%"
            lines.append(f"| {mode} | {name} | {group['problems']} | {median} |")
    return lines
