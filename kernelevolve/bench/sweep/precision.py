"""The sweep summary's "both protocols" section: where KernelBench's protocol (PyTorch's defaults, TF32 cuDNN
convolutions on GPUs) and exact fp32 give a candidate different verdicts, both are shown per problem
(`run.precision_verdicts`, from the harness's exact-fp32 flags)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def precision_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per problem whose candidates were judged at both precisions."""
    rows = []
    for record in records:
        verdicts = record.get("precision_verdicts")
        if verdicts:
            rows.append({"problem": record["problem"], "correct": bool(record.get("correct")), **verdicts})
    return rows


def precision_lines(rows: Sequence[dict[str, Any]] | None) -> list[str]:
    if not rows:
        return []
    lines = [
        "",
        "## Both protocols: PyTorch's defaults and exact fp32",
        "",
        "Problems checked at PyTorch's defaults (KernelBench's protocol: cuDNN convolutions in TF32 on the GPU) "
        "whose candidates were also compared with the reference at exact fp32, at the same tolerance. The "
        "search's verdict is the protocol's; a candidate it rejected was compared at exact fp32 on the trials it "
        "reached.",
        "",
        "| problem | candidates | correct (protocol) | correct (exact fp32) | exact fp32 only | protocol only | winner at exact fp32 |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        winner = row.get("winner_exact_fp32_correct")
        lines.append(
            f"| {row['problem']} | {row['checked']} | {row['protocol_correct']} | {row['exact_fp32_correct']} | "
            f"{row['exact_fp32_only']} | {row['protocol_only']} | "
            f"{'-' if winner is None else ('correct' if winner else 'incorrect')} |"
        )
    return lines
