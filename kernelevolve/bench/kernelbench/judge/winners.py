"""A finished run's winners through the second judge: the entries a sweep record keeps beside ours.

A run directory has what it takes: results.json names the winners (`best`, `best_strict`), graph.jsonl
holds their sources and spec.json the reference. A winner that is both is judged once.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelevolve.bench.kernelbench.judge.process import judge_kernel
from kernelevolve.bench.kernelbench.judge.values import (
    RECORD_KEY,
    JudgeSettings,
    KernelBenchVerdict,
    kernelbench_precision,
)

log = logging.getLogger(__name__)

ROLES = {"best": "best", "strict": "best_strict"}  # a record entry -> the results.json winner it judges


def judge_run(run_dir: Path, settings: JudgeSettings, device: str = "cuda:0") -> dict[str, Any]:
    """{"best": entry, "strict": entry, "error": None}: each winner's verdict with its candidate id (None
    where the run has no such winner); `error` says why none could be judged (an unreadable run)."""
    from kernelevolve.app import GRAPH_FILE, SPEC_FILE
    from kernelevolve.results.report import read_checkpoint
    from kernelevolve.types import KernelSpec

    try:
        results = json.loads((run_dir / "results.json").read_text())
        spec = KernelSpec.from_json(json.loads((run_dir / SPEC_FILE).read_text()))
        ids = {role: (results.get(key) or {}).get("id") for role, key in ROLES.items()}
        (run_dir / GRAPH_FILE).stat()  # a run without its checkpoint is unreadable, not a missing winner
        sources, _ = read_checkpoint(run_dir / GRAPH_FILE)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return {"best": None, "strict": None, "error": f"cannot read the run {run_dir}: {exc}"}
    verdicts: dict[str, KernelBenchVerdict] = {}
    entries: dict[str, Any] = {"error": None}
    for role, node_id in ids.items():
        if node_id is None:
            entries[role] = None
            continue
        if node_id not in verdicts:
            candidate = sources.get(node_id)
            verdicts[node_id] = (
                judge_kernel(
                    candidate["source"],
                    spec.reference_source,
                    settings,
                    backend=str(candidate.get("backend") or "triton"),
                    device=device,
                    precision=kernelbench_precision(spec.dtype),
                    name=spec.name,
                )
                if candidate
                else KernelBenchVerdict.failed(f"{node_id} is not in {GRAPH_FILE}", settings.path)
            )
        entries[role] = {"candidate": node_id, **verdicts[node_id].to_json()}
    return entries


def judged_problem(
    run: Callable[[dict[str, Any], Any], dict[str, Any]],
    settings: JudgeSettings,
    cfg: dict[str, Any],
    problem: Any,
) -> dict[str, Any]:
    """`run(cfg, problem)` (a sweep's runner), then its winners judged into the record. The record's
    `wall_s` includes the judging: the sweep's time limit plans with it."""
    record = run(cfg, problem)
    run_dir = record.get("run_dir")
    if not run_dir:  # a failed run: nothing to judge
        return record
    start = time.monotonic()
    record[RECORD_KEY] = judge_run(Path(run_dir), settings, _judge_device(cfg))
    for role in ROLES:
        entry = record[RECORD_KEY].get(role)
        if entry:
            log.info(
                "%s: KernelBench's evaluator on the %s winner: %s", record.get("problem"), role, _line(entry)
            )
    record["wall_s"] = float(record.get("wall_s") or 0.0) + time.monotonic() - start
    return record


def _judge_device(cfg: dict[str, Any]) -> str:
    """The problem's GPU where the sweep placed it; else (Ray, the CPU platform) this machine's first."""
    devices = [str(d) for d in ((cfg.get("platform") or {}).get("devices") or [])]
    return next((d for d in devices if d.startswith("cuda")), "cuda:0")


def _line(entry: dict[str, Any]) -> str:
    return KernelBenchVerdict.from_json(entry).line()
