"""The figures of the README's "Calls 25-28" section, from the records (run from the repo root).

    python experiments/full_sweep_h200/analysis/s11_calls25_28.py

Strict and permissive speed against torch.compile of the eight level-2 problems, in the records as
committed before calls 22-24 (72091a0), after them (8c51495) and after calls 25-28 (f383f92), and the
times of their own-kernel convolution seeds then and now. Device: nvidia-h200-x2 (see the calls table).
"""

from __future__ import annotations

import json
import subprocess

PROBLEMS = ("L2_057", "L2_069", "L2_071", "L2_073", "L2_082", "L2_085", "L2_087", "L2_093")
COMMITS = {"before": "72091a0", "after 22-24": "8c51495", "after 25-28": "f383f92"}


def record(commit: str, name: str) -> dict:
    path = f"{commit}:experiments/full_sweep_h200/results/{name}.json"
    return json.loads(subprocess.run(["git", "show", path], capture_output=True, text=True, check=True).stdout)


def speed(value: float | None) -> str:
    return f"{value:.2f}x" if value else "none"


def own_seeds(data: dict) -> str:
    seeds = [
        c for c in data.get("candidates") or []
        if c["operator"] == "compiler_seed" and (c.get("what") or {}).get("own_kernels")
    ]
    return ", ".join(
        f"{(c.get('what') or {}).get('fp32_precision') or 'exact'} {c.get('median_ms') or c['status']}" for c in seeds
    )


def main() -> None:
    for name in PROBLEMS:
        rows = {label: record(commit, name) for label, commit in COMMITS.items()}
        strict = " / ".join(speed((r.get("strict") or {}).get("speedup_vs_compile")) for r in rows.values())
        permissive = " / ".join(speed(rows[k]["speedup_vs_compile"]) for k in ("after 22-24", "after 25-28"))
        winner = (rows["after 25-28"].get("strict") or {}).get("winner_fp32_precision")
        print(f"{name}: strict {strict} (now won at {winner}); permissive {permissive}")
        print(f"    own seeds before: {own_seeds(rows['before'])}")
        print(f"    own seeds now:    {own_seeds(rows['after 25-28'])}")


if __name__ == "__main__":
    main()
