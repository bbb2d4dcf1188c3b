"""Run 6 read with each problem's baselines at the fastest of runs 4, 5 and 6 (same protocol, same kind of
machine), so a baseline slowed by the host's load in one run cannot inflate that run's speedups.

    python experiments/sample_sweep_h200/run_06/analysis/min_baselines.py OUT_DIR
    python -m kernelevolve.sweep --out OUT_DIR --summary-only --sample experiments/sweep_sample.md

Prints, per problem whose baseline moves by more than 5%, the three runs' eager and torch.compile times.
"""

import json
import shutil
import sys
from pathlib import Path

RUNS = [Path("experiments/sweep_h200_4"), Path("experiments/sweep_h200_5"), Path("experiments/sweep_h200_6")]


def main() -> None:
    out = Path(sys.argv[1])
    (out / "results").mkdir(parents=True, exist_ok=True)
    shutil.copy(RUNS[-1] / "sweep.json", out / "sweep.json")
    for path in sorted((RUNS[-1] / "results").glob("*.json")):
        record = json.loads(path.read_text())
        runs = [json.loads((run / "results" / path.name).read_text()) for run in RUNS]
        eager = min(r["eager_ms"] for r in runs)
        compiled = min(r["compile_ms"] for r in runs if r.get("compile_ms"))
        if eager < 0.95 * record["eager_ms"] or compiled < 0.95 * record["compile_ms"]:
            eagers = ", ".join(f"{r['eager_ms']:.3f}" for r in runs)
            compiles = ", ".join(f"{r['compile_ms']:.3f}" for r in runs)
            print(f"{record['problem']}: eager {eagers} ms; torch.compile {compiles} ms (runs 4, 5, 6)")
        record["eager_ms"], record["compile_ms"] = eager, compiled
        for part in (record, record.get("strict") or {}, record.get("permissive") or {}):
            if part.get("best_ms"):
                part["speedup_vs_eager"] = eager / part["best_ms"]
                part["speedup_vs_compile"] = compiled / part["best_ms"]
        (out / "results" / path.name).write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
