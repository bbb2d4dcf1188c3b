"""Candidate evaluations per GPU-minute of search, per level: how fast the evaluation machinery turns
candidates into verdicts (issue 7 asks for at least 100 on level 1).

A problem's GPU-minutes are its search wall time (`search_wall_s`: after baselines and seed proposals)
times the share of a GPU it ran on (`gpu_share`: Ray's `num_gpus_per_actor`, or GPUs over problems at
once for the local evaluator). Records from before `gpu_share` take the share the sweep's `--set`
items name, else none. CPU sweeps have no GPU-minutes.

Newer records also carry `evaluation_stages_s` (the harness's seconds per stage, summed
over a problem's evaluations), so the table says where an evaluation's time goes: what the rate target
has to cut.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

_SHARE_SETTING = re.compile(r"^\+?evaluator\.num_gpus_per_actor=([0-9.]+)$")


def gpu_share_from_settings(settings: Mapping[str, Any]) -> float | None:
    """The GPU share a sweep's `--set` items give each problem's actor, if they give one."""
    if settings.get("platform") == "cpu":
        return None
    for item in settings.get("sets") or ():
        match = _SHARE_SETTING.match(str(item))
        if match:
            return float(match.group(1))
    return None


def _rate(records: list[dict[str, Any]], default_share: float | None) -> dict[str, Any]:
    evaluations, gpu_minutes, counted = 0, 0.0, 0
    stages: Counter[str] = Counter()
    staged_evaluations = 0
    for record in records:
        share = record.get("gpu_share", default_share)
        seconds = record.get("search_wall_s")
        if not share or not isinstance(seconds, (int, float)) or seconds <= 0:
            continue
        evaluations += int(record.get("evaluations") or 0)
        gpu_minutes += float(share) * float(seconds) / 60.0
        counted += 1
        if record.get("evaluation_stages_s"):
            stages.update({k: float(v) for k, v in record["evaluation_stages_s"].items()})
            staged_evaluations += int(record.get("evaluations") or 0)
    return {
        "problems": counted,
        "evaluations": evaluations,
        "gpu_minutes": gpu_minutes,
        "per_gpu_minute": evaluations / gpu_minutes if gpu_minutes else None,
        "stages_s": dict(stages),
        "staged_evaluations": staged_evaluations,
    }


def evaluation_rate(records: list[dict[str, Any]], default_share: float | None = None) -> dict[str, Any]:
    """Overall and per-level evaluations per GPU-minute of search."""
    levels = sorted({int(r["level"]) for r in records})
    return {
        "overall": _rate(records, default_share),
        "levels": {
            str(level): _rate([r for r in records if int(r["level"]) == level], default_share)
            for level in levels
        },
    }


def rate_lines(rate: Mapping[str, Any] | None) -> list[str]:
    """The markdown table, or nothing where no record has GPU-minutes."""
    if not rate or not rate["overall"]["problems"]:
        return []
    lines = [
        "## Evaluations per GPU-minute of search",
        "",
        "Search wall time (after baselines; after seed proposals too in records with `seed_proposal_s`) "
        "times each problem's share of a GPU.",
        "",
        "| group | problems | evaluations | GPU-minutes | per GPU-minute |",
        "|---|---:|---:|---:|---:|",
    ]
    groups = [("overall", rate["overall"])] + [(f"level {k}", v) for k, v in rate["levels"].items()]
    for name, group in groups:
        if not group["problems"]:
            continue
        per = group["per_gpu_minute"]
        lines.append(
            f"| {name} | {group['problems']} | {group['evaluations']} | {group['gpu_minutes']:.1f} | "
            f"{per:.1f} |"
            if per is not None
            else f"| {name} | {group['problems']} | {group['evaluations']} | - | - |"
        )
    return [*lines, "", *_stage_lines(groups)]


_STAGE_COLUMNS = 6  # the largest stages overall get a column each; the rest are summed as "other"


def _stage_lines(groups: list[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Where the evaluations' time goes, per group: seconds an evaluation, and each stage's share."""
    overall = Counter(groups[0][1].get("stages_s") or {})
    if not overall:
        return []
    columns = [name for name, _ in overall.most_common(_STAGE_COLUMNS)]
    lines = [
        "Where an evaluation's time goes (the harness's stages, summed over evaluations; device_wait is "
        "time queued for a GPU another evaluation held):",
        "",
        f"| group | evaluations | s per evaluation | {' | '.join(columns)} | other |",
        f"|---|---:|---:|{'---:|' * (len(columns) + 1)}",
    ]
    for name, group in groups:
        stages = Counter(group.get("stages_s") or {})
        total, count = sum(stages.values()), group.get("staged_evaluations") or 0
        if not total or not count:
            continue
        shares = [f"{100 * stages.get(c, 0.0) / total:.0f}%" for c in columns]
        other = total - sum(stages.get(c, 0.0) for c in columns)
        lines.append(
            f"| {name} | {count} | {total / count:.2f} | {' | '.join(shares)} | {100 * other / total:.0f}% |"
        )
    return [*lines, ""]
