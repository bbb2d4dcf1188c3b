"""A sweep's second-judge verdicts beside ours: how many winners KernelBench's evaluator also finds
correct, and our speedup over eager beside the one its own timing gives."""

from __future__ import annotations

from typing import Any

from kernelevolve.bench.kernelbench.judge.values import CORRECT, JUDGE_FAILED, RECORD_KEY
from kernelevolve.results.format import format_ms, format_speedup
from kernelevolve.search.fitness import geomean_of_positive

# a summary mode -> the record entry judged for it: a strict run's best is its strict best
MODE_ENTRY = {"strict": "strict", "permissive": "best"}


def judge_agreement(views: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    """Counts and geomeans per mode, and a row per judged winner; `views` are the summary's records per
    mode (`bench.sweep.summary.mode_record`). None where no record was judged."""
    if not any(r.get(RECORD_KEY) for view in views.values() for r in view):
        return None
    modes: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for mode, view in views.items():
        judged = [(r, entry) for r in view if r.get("correct") and (entry := _entry(r, mode))]
        both = [(r, entry) for r, entry in judged if entry.get("correct")]
        timed = [
            (float(r["speedup_vs_eager"]), float(entry["speedup"]))
            for r, entry in both
            if r.get("speedup_vs_eager") and entry.get("speedup")
        ]
        modes[mode] = {
            "judged": len(judged),
            "correct_by_us": len(judged),  # only winners, which are correct by us, are judged
            "correct_by_both": len(both),
            "incorrect_by_kernelbench": sum(
                1 for _, e in judged if e.get("status") not in (CORRECT, JUDGE_FAILED)
            ),
            "not_judged": sum(1 for _, e in judged if e.get("status") == JUDGE_FAILED),
            "both_timed": len(timed),
            # over the same problems: those both find correct and both timed
            "geomean_speedup_ours": geomean_of_positive([ours for ours, _ in timed]),
            "geomean_speedup_kernelbench": geomean_of_positive([its for _, its in timed]),
        }
        rows += [
            {
                "problem": r["problem"],
                "mode": mode,
                "candidate": entry.get("candidate"),
                "kernelbench_status": entry.get("status"),
                "kernelbench_trials": entry.get("correctness_trials"),
                "speedup_ours": r.get("speedup_vs_eager"),
                "speedup_kernelbench": entry.get("speedup"),
                "best_ms": r.get("best_ms"),
                "eager_ms": r.get("eager_ms"),
                "kernelbench_ms": entry.get("runtime_ms"),
                "kernelbench_reference_ms": entry.get("reference_ms"),
                "error": entry.get("error") or "",
            }
            for r, entry in judged
        ]
    return {"modes": modes, "rows": rows}


def _entry(record: dict[str, Any], mode: str) -> dict[str, Any] | None:
    judged = record.get(RECORD_KEY) or {}
    entry = judged.get(MODE_ENTRY[mode])
    if entry is None and mode == "strict" and record.get("mode") == "strict":
        entry = judged.get("best")  # a strict run's best, where its results named no best_strict
    return entry


def agreement_lines(agreement: dict[str, Any] | None) -> list[str]:
    """The summary's section on the second judge (nothing where it did not run)."""
    if not agreement:
        return []
    lines = [
        "",
        "## KernelBench's own evaluator",
        "",
        "Each winner run again through KernelBench's `eval_kernel_against_ref` (its fp32 tolerance 1e-4, its "
        "correctness trials) in a process of its own, and timed by it: the kernel's mean CUDA-event time from "
        "that result, the reference's from `measure_ref_program_time` (docs/kernelbench_judge.md). Our speedup "
        "is over our eager baseline (medians); KernelBench's is its reference's mean over the kernel's, both "
        "geomeans over the problems both find correct and both timed.",
        "",
        "| mode | judged | correct by us | correct by both | incorrect by KernelBench | could not judge "
        "| geomean speedup (ours) | geomean speedup (KernelBench's timing) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, group in agreement["modes"].items():
        lines.append(
            f"| {mode} | {group['judged']} | {group['correct_by_us']} | {group['correct_by_both']} | "
            f"{group['incorrect_by_kernelbench']} | {group['not_judged']} | "
            f"{format_speedup(group['geomean_speedup_ours'])} | {format_speedup(group['geomean_speedup_kernelbench'])} |"
        )
    lines += [
        "",
        "| problem | mode | KernelBench's verdict | ours vs eager | KernelBench's speedup | our ms | its ms "
        "| our eager ms | its reference ms | detail |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in agreement["rows"]:
        verdict = f"{row['kernelbench_status']} {row['kernelbench_trials'] or ''}".strip()
        detail = str(row["error"]).replace("|", "\\|")
        lines.append(
            f"| {row['problem']} | {row['mode']} | {verdict} | {format_speedup(row['speedup_ours'])} | "
            f"{format_speedup(row['speedup_kernelbench'])} | {format_ms(row['best_ms'])} | "
            f"{format_ms(row['kernelbench_ms'])} | {format_ms(row['eager_ms'])} | "
            f"{format_ms(row['kernelbench_reference_ms'])} | {detail} |"
        )
    return lines
