"""Why a level-1 evaluation's locked stages took ~3x longer in sample run 7 than alone.

    PYTHONPATH=. python experiments/eval_throughput/2026-11-30_session13/contention.py \
        --kernelbench-path .kbdata/problems.jsonl --problems 1/22 1/14 --out $OUT/contention.json

Alone (session 12's profile), L1/22 Tanh's correctness took 0.17 s and its timing 0.23 s (30 calls,
settled); in run 7's sweep, 0.49 s and 0.85 s an evaluation. This evaluates the reference copied as the
candidate (as profile_locked.py does) a few times in this process while one neighbour process does one
kind of work the sweep does next to an evaluation holding the device lock, and records the locked stages'
times, the timed calls and what stopped them:
  none        nothing
  cpu         every core busy with Python (Triton and Inductor compiles, static checks)
  alloc       6.4 GB placeholders allocated and freed with empty_cache (a precompile's allocations)
  gpu         a stream of small kernels (work that should never run unlocked)
  evaluator   another process evaluating the same candidate through the harness (the lock's other holder)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))


def _burn(stop: Any) -> None:
    x = 0
    while not stop.is_set():
        for i in range(100000):
            x += i


def _evaluate_loop(key: str, kb_path: str, ready: Any, stop: Any) -> None:
    from kernelevolve.eval import harness

    request, platform, device = _request(key, kb_path, "h200")
    harness.evaluate(request, platform, device)
    ready.set()
    while not stop.is_set():
        harness.evaluate(request, platform, device)


def _request(key: str, kb_path: str, platform_name: str) -> tuple[Any, Any, str]:
    from kernelevolve.backends import get_backend
    from kernelevolve.eval import harness
    from kernelevolve.platforms import load_platform
    from kernelevolve.specs.loading import resolve_spec
    from kernelevolve.types import Candidate, EvalRequest
    from kernelevolve.variation.reference_copy import reference_statements, unparse
    from kernelevolve.verify import platform_settings

    platform = load_platform(platform_name)
    device = harness.default_device(platform)
    get_backend("triton").prepare_process(device)
    settings = platform_settings(platform_name, (("strict", False),))
    harness._static_stage = lambda *args, **kwargs: None  # the reference copy has no kernel of its own
    spec = resolve_spec(f"kernelbench:{key}", platform, kb_path)
    source = unparse(reference_statements(spec.reference_source))
    candidate = Candidate(source=source, backend="triton", operator="contention")
    return EvalRequest(candidate, spec, platform.name, settings), platform, device


def _neighbour(kind: str, ready: Any, stop: Any) -> None:
    import torch

    torch.cuda.init()
    ready.set()
    while not stop.is_set():
        if kind == "alloc":
            a = torch.empty(1_610_612_736, device="cuda")
            b = torch.empty_like(a)
            del a, b
            torch.cuda.empty_cache()
            time.sleep(0.02)
        elif kind == "gpu":
            x = torch.randn(1 << 20, device="cuda")
            for _ in range(50):
                x = x * 1.0001
            torch.cuda.synchronize()


def _start(kind: str, key: str, kb_path: str) -> tuple[list[Any], Any]:
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    procs = []
    if kind == "cpu":
        for _ in range(os.cpu_count() or 2):
            p = ctx.Process(target=_burn, args=(stop,), daemon=True)
            p.start()
            procs.append(p)
    elif kind in ("alloc", "gpu", "evaluator"):
        ready = ctx.Event()
        if kind == "evaluator":
            p = ctx.Process(target=_evaluate_loop, args=(key, kb_path, ready, stop), daemon=True)
        else:
            p = ctx.Process(target=_neighbour, args=(kind, ready, stop), daemon=True)
        p.start()
        ready.wait(120)
        procs.append(p)
    time.sleep(1.0)
    return procs, stop


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernelbench-path", required=True)
    parser.add_argument("--problems", nargs="+", required=True)
    parser.add_argument("--evaluations", type=int, default=4)
    parser.add_argument("--kinds", nargs="+", default=["none", "cpu", "alloc", "gpu", "evaluator"])
    parser.add_argument("--platform", default="h200", help="cpu: a smoke test (kinds none and cpu)")
    parser.add_argument("--out", type=Path, required=True)
    cli = parser.parse_args()

    from kernelevolve.eval import harness

    rows: list[dict[str, Any]] = []
    for key in cli.problems:
        request, platform, device = _request(key, cli.kernelbench_path, cli.platform)
        harness.evaluate(request, platform, device)  # warm: compiles, caches the reference outputs
        for kind in cli.kinds:
            procs, stop = _start(kind, key, cli.kernelbench_path)
            try:
                for n in range(cli.evaluations):
                    started = time.perf_counter()
                    report = harness.evaluate(request, platform, device)
                    stats = next(iter(report.latency.values()), None)
                    row = {
                        "problem": key,
                        "neighbour": kind,
                        "evaluation": n,
                        "status": str(report.status),
                        "wall_s": round(time.perf_counter() - started, 3),
                        "correctness_s": round(report.phase_s.get("correctness", 0.0), 3),
                        "timing_s": round(report.phase_s.get("timing", 0.0), 3),
                        "timed_calls": stats.trials if stats else None,
                        "stopped_by": stats.stopped_by if stats else None,
                        "median_ms": stats and round(stats.median_ms, 4),
                        "min_ms": stats and round(stats.min_ms, 4),
                        "max_ms": stats and round(stats.max_ms, 4),
                        "host_ms": stats and stats.host_ms and round(stats.host_ms, 4),
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
            finally:
                stop.set()
                for p in procs:
                    p.join(10)
            cli.out.write_text(json.dumps(rows, indent=1))
    print(
        "\nproblem neighbour: correctness s, timing s, timed calls, stopped_by, median ms (means over evaluations)"
    )
    for key in cli.problems:
        for kind in cli.kinds:
            sel = [r for r in rows if r["problem"] == key and r["neighbour"] == kind]
            if not sel:
                continue
            means = {
                f: sum(r[f] or 0 for r in sel) / len(sel)
                for f in ("correctness_s", "timing_s", "timed_calls", "median_ms")
            }
            print(
                f"{key} {kind:9s} {means['correctness_s']:.3f} {means['timing_s']:.3f} {means['timed_calls']:.0f} "
                f"{sorted({r['stopped_by'] for r in sel})} {means['median_ms']:.4f}"
            )


if __name__ == "__main__":
    main()
