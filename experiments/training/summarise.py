"""Table of the training runs: per spec, mode and shape, the best kernel's forward + backward time against
eager's and torch.compile's (both forward + backward), and its forward and backward apart.

The pair's times and speedups are results.json's (the confirmed winner's where its confirmation passed);
the forward apart is the winner's report in graph.jsonl (`forward_latency`), the backward the difference.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _forward_ms(run: Path, node: str) -> dict[str, float]:
    found: dict[str, float] = {}
    graph = run / "graph.jsonl"
    for line in graph.read_text().splitlines() if graph.is_file() else []:
        record = json.loads(line)
        if record.get("type") == "report" and record.get("id") == node:
            found = {k: v["median_ms"] for k, v in record["report"].get("forward_latency", {}).items()}
    return found


def _cell(value: Any, unit: str = "") -> str:
    return "-" if value is None else f"{value:.3f}{unit}" if unit == "" else f"{value:.2f}{unit}"


def main(work: Path) -> None:
    print(
        "| run | shape | ours ms (fwd+bwd) | fwd ms | bwd ms | eager ms | compile ms | vs eager | vs compile | best by | evals (ok) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for results_file in sorted((work / "runs").glob("*/results.json")):
        results = json.loads(results_file.read_text())
        name = results_file.parent.name
        evals = f"{results['evaluations']} ({results['evaluations_by_status'].get('ok', 0)})"
        best = results.get("best")
        if not best:
            print(f"| {name} | - | - | - | - | - | - | - | - | no correct kernel | {evals} |")
            continue
        forward = _forward_ms(results_file.parent, best["id"])
        for row in best["shapes"]:
            fwd = forward.get(row["shape"])
            search_ms = best["search"]["median_ms"].get(row["shape"])
            bwd = None if fwd is None or search_ms is None else search_ms - fwd
            print(
                f"| {name} | {row['shape']} | {_cell(row['best_ms'])} | {_cell(fwd)} | {_cell(bwd)} "
                f"| {_cell(row['eager_ms'])} | {_cell(row['compile_ms'])} | {_cell(row['speedup_vs_eager'], 'x')} "
                f"| {_cell(row['speedup_vs_compile'], 'x')} | {best['operator']}/{best['mode']} | {evals} |"
            )
    print(
        "\nfwd / bwd: the search's own timing of the winner (forward alone, and fwd+bwd less it); ours ms is"
    )
    print("the confirmed time where the confirmation passed.")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
