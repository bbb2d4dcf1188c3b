"""Timing reproducibility: the same kernel timed in two separate processes, for the shipped specs.

For each shipped spec with a Triton template, the first template is evaluated by two independent
LocalEvaluators (each a fresh child process and CUDA context): every spec in the first, then every
spec in the second. Prints the
median latency per shape from each process and their relative difference; writes JSON to --out.

    python3 experiments/timing_repro/run.py --platform h200 --out $OUT/timing_repro.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kernelevolve.eval.local import LocalEvaluator  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from kernelevolve.specs.loading import resolve_spec, shipped_spec_names  # noqa: E402
from kernelevolve.types import Candidate, EvalRequest, EvalSettings  # noqa: E402
from kernelevolve.variation.template_library import templates_for  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--platform", default="h200")
    parser.add_argument("--specs", default="")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    platform = load_platform(args.platform)
    settings = EvalSettings(correctness_trials=2, measure_compile_baseline=False, timeout_s=120)
    names = args.specs.split(",") if args.specs else shipped_spec_names()
    rows, worst = [], 0.0
    jobs = []
    for name in names:
        spec = resolve_spec(name, platform)
        templates = templates_for(spec, "triton")
        if templates:
            candidate = Candidate(source=templates[0].source, backend="triton", operator="template")
            jobs.append((name, templates[0].name, EvalRequest(candidate, spec, platform.name, settings)))
    # Every spec in process 1, then every spec in process 2: two children, two CUDA contexts.
    medians: dict[str, list[dict[str, float] | None]] = {name: [] for name, _, _ in jobs}
    details: dict[str, list[dict[str, object] | None]] = {name: [] for name, _, _ in jobs}
    for _process in range(2):
        evaluator = LocalEvaluator(platform, settings)
        try:
            for name, _template, request in jobs:
                report = evaluator.submit(request).result()
                medians[name].append({k: v.median_ms for k, v in report.latency.items()} if report.ok else None)
                details[name].append({k: v.to_json() for k, v in report.latency.items()} if report.ok else None)
                if not report.ok:
                    print(f"{name}: {report.status.value} {report.error_name} {report.feedback[:300]}", flush=True)
        finally:
            evaluator.close()
    for name, template, _request in jobs:
        first, second = medians[name]
        if first is None or second is None:
            rows.append({"spec": name, "template": template, "status": "failed"})
            continue
        for shape in first:
            a, b = first[shape], second[shape]
            diff = abs(a - b) / min(a, b)
            worst = max(worst, diff)
            rows.append({"spec": name, "template": template, "shape": shape, "ms_process_1": a,
                         "ms_process_2": b, "relative_difference": diff,
                         "stats": [d[shape] if d else None for d in details[name]]})
            print(f"{name:<24} {shape:<22} {a:10.4f} {b:10.4f} {100 * diff:6.2f}%", flush=True)
    summary = {"platform": args.platform, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "timing_trials": settings.timing_trials, "rows": rows, "worst_relative_difference": worst,
               "specs_measured": len({r["spec"] for r in rows if "shape" in r})}
    args.out.write_text(json.dumps(summary, indent=2))
    print(f"specs measured: {summary['specs_measured']}, worst difference {100 * worst:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
