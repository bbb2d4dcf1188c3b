"""Where the judge's time goes inside the stages it holds the device lock for, function by function.

The sweep's stage split (session 39: kernel_share 0.45 s and correctness 0.31 s of 1.30 s locked per level-1
evaluation on an H100) names the stages, not the calls inside them. This judge evaluates eval_phases.py's
honest scalar-multiply kernel REPEATS times at one multi-GB size under cProfile (the judge's own process:
a wait on the runner shows as the reply read it blocks in) and prints the functions with the most time,
cumulative and own. The first evaluation (the zygote's start, first uses) is profiled apart.

Usage on the device: PYTHONPATH=. python3 experiments/adversarial_gpu/profile_eval.py [REPEATS [M N]]
  (writes $OUT/profile_eval.pstats where OUT is set)
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from eval_phases import KERNEL, REFERENCE  # noqa: E402

from kernelevolve.backends.triton import BACKEND  # noqa: E402
from kernelevolve.eval import harness  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, ShapeCase  # noqa: E402


def _platform_name() -> tuple[str, str]:
    import torch

    if not torch.cuda.is_available():
        return "cpu", "cpu"
    return "cuda:0", "h100" if "H100" in torch.cuda.get_device_name(0) else "h200"


def main(repeats: int, m: int, n: int) -> None:
    device, name = _platform_name()
    if device == "cpu":  # a dry run of this script: a small size
        m, n = min(m, 512), min(n, 512)
    BACKEND.prepare_process(device)
    platform = load_platform(name)
    options = yaml.safe_load(Path(f"conf/platform/{name}.yaml").read_text())["eval"]
    settings = EvalSettings(**{**options, "strict": False})
    spec = KernelSpec(
        name="scale_profiled",
        reference_source=REFERENCE,
        shapes=(ShapeCase("default", {"M": m, "N": n}),),
        reference_precision="framework_default",
    )

    def evaluate(tag: str) -> tuple[float, dict[str, float]]:
        source = KERNEL + f"\n# variant {tag}\n"
        request = EvalRequest(Candidate(source, "triton", tag), spec, platform.name, settings)
        started = time.perf_counter()
        report = harness.evaluate(request, platform, device)
        if report.status.value != "ok":
            print(tag, report.status, report.feedback[:300], flush=True)
        return time.perf_counter() - started, dict(report.phase_s)

    first = cProfile.Profile()  # its own profile: a sweep's first evaluation of a problem paid 2.4 s of
    first.enable()  # timing_setup that later ones did not (session 40), on top of the runner's start
    wall, phases = evaluate("warm")
    first.disable()
    print(f"# {name} {m}x{n} fp32 ({m * n * 4 / 2**30:.2f} GiB an input); first evaluation {wall:.2f} s")
    print("first evaluation's stages (s): " + " ".join(f"{k}={v:.3f}" for k, v in sorted(phases.items())))
    _print(first, "first evaluation, by cumulative", "cumulative", 30)
    profiler = cProfile.Profile()
    stages: dict[str, list[float]] = defaultdict(list)
    profiler.enable()
    for i in range(repeats):
        wall, phases = evaluate(f"p{i}")
        for stage, seconds in phases.items():
            stages[stage].append(seconds)
    profiler.disable()
    shown = sorted(stages.items(), key=lambda kv: -sum(kv[1]))
    print("stages (mean s): " + " ".join(f"{k}={statistics.mean(v):.3f}" for k, v in shown))
    out = os.environ.get("OUT")
    if out:
        profiler.dump_stats(f"{out}/profile_eval.pstats")
    for order in ("cumulative", "tottime"):
        _print(profiler, f"by {order}, {repeats} evaluations", order, 40)


def _print(profiler: cProfile.Profile, title: str, order: str, rows: int) -> None:
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text).sort_stats(order)
    stats.print_stats(r"kernelevolve|torch/(cuda|multiprocessing|_tensor)|built-in|import", rows)
    print(f"## {title}")
    print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:12000])


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*(args + [6, 32768, 32768][len(args) :]))
