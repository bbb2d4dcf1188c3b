"""Profile the harness in this process on the candidates a run evaluated (cProfile, top functions).

    python experiments/eval_throughput/profile_harness.py <run dir> [--limit 6] [--top 40] [--out FILE]

Re-evaluates up to `--limit` candidates of the run's graph.jsonl with the run's spec, platform and
settings, in this process (no worker), once to warm caches (Triton's disk cache, CUDA context) and
once under cProfile, and prints the functions with the most cumulative time for the second pass.
Candidate code runs in this process: use it only on runs whose candidates you trust (our own seeds).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, when not installed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--limit", type=int, default=6)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--out", type=Path, default=None)
    cli = parser.parse_args()

    from kernelevolve.eval import harness
    from kernelevolve.platforms import load_platform
    from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec

    config = json.loads((cli.run_dir / "config.json").read_text())
    spec = KernelSpec.from_json(json.loads((cli.run_dir / "spec.json").read_text()))
    platform = load_platform(json.loads((cli.run_dir / "results.json").read_text())["platform"])
    chosen = (config.get("platform") or {}).get("eval") or {}
    settings = EvalSettings(**{k: v for k, v in chosen.items() if k in EvalSettings.__dataclass_fields__})
    candidates = []
    for line in (cli.run_dir / "graph.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "candidate":
            candidates.append(Candidate.from_json({k: v for k, v in record.items() if k != "type"}))
    candidates = candidates[: cli.limit]
    requests = [EvalRequest(c, spec, platform.name, settings) for c in candidates]
    from kernelevolve.backends import get_backend

    for name, support in platform.backends.items():  # as the evaluation child does at start
        if support != "none":
            get_backend(name).prepare_process(harness.default_device(platform))

    lines = []
    for label in ("cold", "warm"):
        started = time.perf_counter()
        profiler = cProfile.Profile() if label == "warm" else None
        if profiler:
            profiler.enable()
        reports = [harness.evaluate(r, platform) for r in requests]
        if profiler:
            profiler.disable()
        lines.append(f"{label}: {len(reports)} evaluations in {time.perf_counter() - started:.2f} s")
        for report in reports:
            lines.append(
                f"  {report.candidate_id} {report.status.value} {report.wall_s:.2f} s {report.phase_s}"
            )
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(cli.top)
    text = "\n".join(lines) + "\n" + stream.getvalue()
    print(text)
    if cli.out:
        cli.out.write_text(text)


if __name__ == "__main__":
    main()
