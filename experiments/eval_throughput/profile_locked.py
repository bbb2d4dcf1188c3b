"""Where the locked part of an evaluation goes, step by step, on KernelBench problems at full size.

    python experiments/eval_throughput/profile_locked.py --kernelbench-path .kbdata/problems.jsonl \
        --problems 1/22 1/38 1/70 --out $OUT/profile_locked.json

For each problem, with the reference copied as the candidate (ModelNew = Model, so the numbers are
the harness's own cost at that size): every step of a correctness trial timed with the device
synchronised around it (inputs, reference, copies, guard bands, allocator poison, the candidate,
the input-mutation check, the value comparison), then the whole harness twice in this process
(`phase_s`; the second check may reuse the reference outputs kept by the first), and the timing
stage's calls. Prints a table per problem; the JSON has every figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, when not installed


def _timed(fn: Any) -> tuple[Any, float]:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    started = time.perf_counter()
    value = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return value, time.perf_counter() - started


def _trial_steps(
    ref_model: Any, new_model: Any, make_inputs: Any, seed: int, atol: float, rtol: float
) -> dict[str, float]:
    """One correctness trial as `correctness.check_correctness` runs it, each step timed."""
    import torch

    from kernelevolve.eval import correctness as c

    steps: dict[str, float] = {}

    def step(name: str, fn: Any) -> Any:
        value, seconds = _timed(fn)
        steps[name] = steps.get(name, 0.0) + seconds
        return value

    inputs = step("make_inputs", lambda: make_inputs(seed))
    expected = step("reference", lambda: c.run_reference(ref_model)(0, seed, inputs))
    pristine = step("pristine_copy", lambda: c.clone_tree(inputs))
    guarded, guards = step("guard_inputs", lambda: c.guard_inputs(inputs))
    step("poison_allocator", lambda: c.poison_allocator(c._tensor_leaves(expected)))

    def run_candidate() -> Any:
        with c.nan_filled_empty(), torch.no_grad():
            c.seed_forward(seed)
            return new_model(*guarded)

    got = step("candidate", run_candidate)
    step("structure", lambda: c._alias_problem(c._leaves(got, "output"), guarded))
    step("mutation_check", lambda: c._mutation_problem(guarded, pristine))
    step("guard_check", lambda: [c._guards_intact(b) for b in guards if b is not None])
    step(
        "value_check",
        lambda: [
            c._value_problem(p, r, o, atol, rtol)
            for (p, r), (_, o) in zip(c._leaves(expected, "output"), c._leaves(got, "output"), strict=True)
        ],
    )
    # the chunked torch comparison, which the one-pass GPU summary (compare_kernel) replaced where values pass
    step(
        "value_check_torch_chunks",
        lambda: [
            c._chunked_scan(r, o, atol, rtol)
            for (_, r), (_, o) in zip(c._leaves(expected, "output"), c._leaves(got, "output"), strict=True)
            if isinstance(r, torch.Tensor)
        ],
    )
    return steps


def profile_problem(key: str, kb_path: str, trials: int, platform_name: str) -> dict[str, Any]:
    import torch

    from kernelevolve.backends import get_backend
    from kernelevolve.eval import harness, reference, reference_outputs
    from kernelevolve.platforms import load_platform
    from kernelevolve.specs.loading import resolve_spec
    from kernelevolve.types import Candidate, EvalRequest, EvalSettings
    from kernelevolve.variation.reference_copy import reference_statements, unparse

    platform = load_platform(platform_name)
    spec = resolve_spec(f"kernelbench:{key}", platform, kb_path)
    shape = spec.shapes[0]
    device = harness.default_device(platform)
    dtype = reference.torch_dtype(spec.dtype)
    source = unparse(reference_statements(spec.reference_source))
    backend = get_backend("triton")
    backend.prepare_process(device)
    module = backend.load(source, f"profile_candidate_{key.replace('/', '_')}")
    ref_module = reference.load_reference(spec.reference_source)
    ref_model, new_model = harness._build_models(
        ref_module, module.ModelNew, shape, 0, device, dtype, backend, module.__name__, ""
    )
    make_inputs = harness.input_maker(ref_module, device, dtype)
    per_trial: list[dict[str, float]] = []
    for trial in range(trials):
        per_trial.append(_trial_steps(ref_model, new_model, make_inputs, 17 + trial, spec.atol, spec.rtol))
    del ref_model, new_model
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    steps = {name: sum(t[name] for t in per_trial[1:]) / max(1, len(per_trial) - 1) for name in per_trial[0]}

    from kernelevolve.verify import platform_settings

    base = platform_settings(platform_name, (("strict", False),))
    # The candidate is the reference itself, which the static checks rightly reject (no kernel of its
    # own); they cost nothing under the device lock, so they are skipped here.
    harness._static_stage = lambda *args, **kwargs: None
    runs: list[dict[str, Any]] = []
    for label, settings in (
        ("default", base),
        ("default again", base),
        ("cache 48 GiB", EvalSettings(**{**base.to_json(), "reference_cache_mb": 48 * 1024.0})),
        ("cache 48 GiB again", EvalSettings(**{**base.to_json(), "reference_cache_mb": 48 * 1024.0})),
    ):
        if label.endswith("GiB"):
            reference_outputs.KEPT.clear()  # a key found too big for the default budget is not tried again
        request = EvalRequest(
            Candidate(source=source, backend="triton", operator="profile"), spec, platform.name, settings
        )
        started = time.perf_counter()
        report = harness.evaluate(request, platform, device)
        runs.append(
            {
                "run": label,
                "status": str(report.status),
                "wall_s": round(time.perf_counter() - started, 3),
                "phase_s": report.phase_s,
                "timing_trials": {k: v.trials for k, v in report.latency.items()},
                "median_ms": {k: v.median_ms for k, v in report.latency.items()},
                "stopped_by": {k: v.stopped_by for k, v in report.latency.items()},
            }
        )
    reference_outputs.KEPT.clear()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return {"problem": key, "name": spec.name, "trial_steps_s": steps, "harness": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernelbench-path", required=True)
    parser.add_argument("--problems", nargs="+", required=True)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--platform", default="h200", help="cpu for a smoke test at CPU sizes")
    parser.add_argument("--out", type=Path, required=True)
    cli = parser.parse_args()
    results = []
    for key in cli.problems:
        try:
            result = profile_problem(key, cli.kernelbench_path, cli.trials, cli.platform)
        except Exception as exc:  # noqa: BLE001 - one problem's failure must not lose the others
            result = {"problem": key, "error": f"{type(exc).__name__}: {exc}"}
        results.append(result)
        cli.out.write_text(json.dumps(results, indent=1))
        if "error" in result:
            print(key, result["error"])
            continue
        steps = result["trial_steps_s"]
        print(f"\n{key} {result['name']}: one correctness trial, ms per step")
        print("  " + ", ".join(f"{k} {1e3 * v:.1f}" for k, v in steps.items()))
        for run in result["harness"]:
            phases = ", ".join(f"{k} {v:.2f}" for k, v in run["phase_s"].items() if v >= 0.005)
            print(
                f"  harness {run['run']}: {run['status']} wall {run['wall_s']:.2f} s; {phases}; "
                f"timed calls {run['timing_trials']} {run['stopped_by']}"
            )


if __name__ == "__main__":
    main()
