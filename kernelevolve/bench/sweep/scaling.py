"""GPU scaling of sweeps: the same problems run on fewer and on more GPUs, compared per GPU.

    python -m kernelevolve.bench.sweep.scaling --base runs/sweeps/one_gpu --scaled runs/sweeps/two_gpus

Each folder is a sweep whose calls are logged in `sweep.json` (GPUs visible, problems at once, wall
time, problems run). Only problems both folders ran are compared, and only calls that started from
fresh caches count unless `--allow-warm` is given: a call reusing another's baselines and compiles
is faster for reasons that have nothing to do with its GPUs. Efficiency is the scaled run's problem
rate per GPU over the base run's.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevolve.bench.sweep.summary import MANIFEST, load_records


@dataclass(frozen=True)
class CallRate:
    """Throughput of one sweep's calls over a set of problems."""

    gpus: int
    problems: int
    wall_s: float
    evaluations: int

    @property
    def problems_per_minute(self) -> float:
        return 60.0 * self.problems / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def evaluations_per_gpu_minute(self) -> float:
        return 60.0 * self.evaluations / (self.wall_s * self.gpus) if self.wall_s > 0 and self.gpus else 0.0


class ScalingError(ValueError):
    """The two sweeps cannot be compared (no common problems, warm caches, unknown GPU counts)."""


def _calls(sweep: Path) -> list[dict[str, Any]]:
    manifest = json.loads((sweep / MANIFEST).read_text())
    return list(manifest.get("calls") or [])


def call_rate(sweep: Path, problems: set[str], allow_warm: bool = False) -> CallRate:
    """Rate over the calls of `sweep` that ran any of `problems` (their whole wall time counts)."""
    calls = [call for call in _calls(sweep) if problems & set(call.get("ran") or ())]
    if not calls:
        raise ScalingError(f"{sweep}: no logged call ran any of the compared problems")
    if not allow_warm and not all(call.get("fresh_caches") for call in calls):
        raise ScalingError(f"{sweep}: a call ran with warm caches (use --fresh-caches, or --allow-warm)")
    gpus = {int(call.get("gpus") or 0) for call in calls}
    if len(gpus) != 1 or 0 in gpus:
        raise ScalingError(f"{sweep}: calls ran on {sorted(gpus)} GPUs; compare calls of one GPU count")
    evaluations = {r["problem"]: int(r.get("evaluations") or 0) for r in load_records(sweep)}
    ran = problems & {key for call in calls for key in call.get("ran") or ()}
    return CallRate(
        gpus=gpus.pop(),
        problems=len(ran),
        wall_s=sum(float(call["wall_s"]) for call in calls),
        evaluations=sum(evaluations.get(key, 0) for key in ran),
    )


def compare(base: Path, scaled: Path, allow_warm: bool = False) -> dict[str, Any]:
    """Problem and evaluation rates of both sweeps over the problems each ran, and the efficiency."""
    ran_base = {key for call in _calls(base) for key in call.get("ran") or ()}
    ran_scaled = {key for call in _calls(scaled) for key in call.get("ran") or ()}
    common = ran_base & ran_scaled
    if not common:
        raise ScalingError("the two sweeps ran no problem in common")
    if ran_base != common or ran_scaled != common:
        raise ScalingError(
            "the sweeps' calls ran different problems "
            f"({len(ran_base - common)} only in the base, {len(ran_scaled - common)} only in the scaled one): "
            "run the same selection in both"
        )
    one, many = call_rate(base, common, allow_warm), call_rate(scaled, common, allow_warm)
    per_gpu = (many.problems_per_minute / many.gpus) / (one.problems_per_minute / one.gpus)
    return {"problems": len(common), "base": one, "scaled": many, "efficiency": per_gpu}


def markdown(result: dict[str, Any]) -> str:
    rows = [
        "| run | GPUs | problems | wall s | problems/min | evaluations per GPU-minute |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in ("base", "scaled"):
        rate: CallRate = result[name]
        rows.append(
            f"| {name} | {rate.gpus} | {rate.problems} | {rate.wall_s:.0f} | {rate.problems_per_minute:.2f} | "
            f"{rate.evaluations_per_gpu_minute:.1f} |"
        )
    rows.append("")
    rows.append(f"Scaling efficiency (problem rate per GPU, scaled / base): {result['efficiency']:.0%}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernelevolve.bench.sweep.scaling", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--base", type=Path, required=True, help="sweep folder run on fewer GPUs")
    parser.add_argument("--scaled", type=Path, required=True, help="sweep folder run on more GPUs")
    parser.add_argument("--allow-warm", action="store_true", help="also compare calls that had warm caches")
    args = parser.parse_args(argv)
    try:
        print(markdown(compare(args.base, args.scaled, args.allow_warm)))
    except (ScalingError, OSError, json.JSONDecodeError) as exc:
        print(f"cannot compare: {exc}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
