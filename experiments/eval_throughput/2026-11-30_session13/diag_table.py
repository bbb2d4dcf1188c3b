"""Every evaluation of a sweep's run folders as one CSV row: its locked stages, timed calls and what stopped them.

python experiments/eval_throughput/2026-11-30_session13/diag_table.py SWEEP_DIR > evaluations.csv
"""

import csv
import json
import sys
from pathlib import Path

FIELDS = [
    "problem",
    "operator",
    "status",
    "correctness_s",
    "timing_s",
    "device_wait_s",
    "precompile_s",
    "timed_calls",
    "stopped_by",
    "median_ms",
]

writer = csv.DictWriter(sys.stdout, FIELDS)
writer.writeheader()
for graph in sorted(Path(sys.argv[1]).glob("runs/*/graph.jsonl")):
    operators = {}
    for line in graph.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "candidate":
            operators[record.get("id")] = record.get("operator", "")
        report = record.get("report")
        if not report:
            continue
        phases = report.get("phase_s") or {}
        latency = next(iter((report.get("latency") or {}).values()), {})
        writer.writerow(
            {
                "problem": graph.parent.name,
                "operator": operators.get(report.get("candidate_id"), ""),
                "status": report.get("status", ""),
                "correctness_s": round(phases.get("correctness", 0.0), 3),
                "timing_s": round(phases.get("timing", 0.0), 3),
                "device_wait_s": round(phases.get("device_wait", 0.0), 3),
                "precompile_s": round(phases.get("precompile", 0.0), 3),
                "timed_calls": latency.get("trials", ""),
                "stopped_by": latency.get("stopped_by", ""),
                "median_ms": latency.get("median_ms") and round(latency["median_ms"], 4),
            }
        )
