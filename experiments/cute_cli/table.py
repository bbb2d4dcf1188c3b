"""Markdown table of each run's best verified kernel per backend (results.json best_by_backend)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _ms(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else "-"


def main(run_dirs: list[str]) -> None:
    print("| spec | shape | backend | best ms | eager ms | compile ms | vs eager | vs compile | evals |")
    print("|---|---|---|---|---|---|---|---|---|")
    for run_dir in map(Path, run_dirs):
        path = run_dir / "results.json"
        if not path.is_file():
            print(f"| {run_dir.name} | - | no results.json | - | - | - | - | - | - |")
            continue
        results = json.loads(path.read_text())
        evals = results.get("evaluations", "-")
        by_backend = results.get("best_by_backend") or {}
        if not by_backend:
            print(f"| {run_dir.name} | - | no verified kernel | - | - | - | - | - | {evals} |")
        for backend, best in sorted(by_backend.items()):
            for row in best["shapes"]:
                vs_eager = f"{row['speedup_vs_eager']:.2f}x" if row["speedup_vs_eager"] else "-"
                vs_compile = f"{row['speedup_vs_compile']:.2f}x" if row["speedup_vs_compile"] else "-"
                print(
                    f"| {run_dir.name} | {row['shape']} | {backend} | {_ms(row['best_ms'])} | "
                    f"{_ms(row['eager_ms'])} | {_ms(row['compile_ms'])} | {vs_eager} | {vs_compile} | {evals} |"
                )


if __name__ == "__main__":
    main(sys.argv[1:])
