"""Table of a directory of kernelevolve runs: best, eager and torch.compile ms per shape, evaluations, wall time."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(out: Path) -> None:
    walls = {}
    walls_file = out / "walls.txt"
    if walls_file.is_file():
        for line in walls_file.read_text().splitlines():
            name, _rc, wall = line.split()
            walls[name] = wall.split("=")[1]
    print("| run | shape | best ms | eager ms | compile ms | vs eager | vs compile | best by | evals (ok) | run wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for results_file in sorted((out / "runs").glob("*/results.json")):
        results = json.loads(results_file.read_text())
        name = results_file.parent.name
        best = results.get("best")
        evals = f"{results['evaluations']} ({results['evaluations_by_status'].get('ok', 0)})"
        if not best:
            print(f"| {name} | - | - | - | - | - | - | no correct kernel | {evals} | {walls.get(name, '-')} |")
            continue
        for row in best["shapes"]:
            fmt = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
            ratio = lambda v: "-" if v is None else f"{v:.2f}x"  # noqa: E731
            print(
                f"| {name} | {row['shape']} | {fmt(row['best_ms'])} | {fmt(row['eager_ms'])} | {fmt(row['compile_ms'])} "
                f"| {ratio(row['speedup_vs_eager'])} | {ratio(row['speedup_vs_compile'])} "
                f"| {best['operator']}/{best['mode']} | {evals} | {walls.get(name, '-')} |"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
