"""Where one evaluation's time goes, stage by stage, with no other evaluation competing for the device.

This process is the judge (`harness.evaluate` called directly); each evaluation forks its runner from
this process's zygote, as an evaluation child's do in a sweep. One honest Triton kernel (a scalar
multiply, L1/5's form) is evaluated REPEATS times at each input size, permissive, with the h200
platform's evaluation settings. The first evaluation of the run pays the zygote's start and is left
out of the means.

Usage on the device: PYTHONPATH=. python3 experiments/adversarial_gpu/eval_phases.py [REPEATS] > "$OUT/eval_phases.txt"
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

from kernelevolve.backends.triton import BACKEND
from kernelevolve.eval import harness
from kernelevolve.platforms import load_platform
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, ShapeCase

REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, A, s):
        return A * s


M = 1024
N = 1024


def get_inputs():
    return [torch.randn(M, N), 3.14]


def get_init_inputs():
    return []
"""

KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(a_ptr, out_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) * s, mask=mask)


class ModelNew(nn.Module):
    def forward(self, A, s):
        out = torch.empty_like(A)
        n = A.numel()
        scale_kernel[(triton.cdiv(n, 4096),)](A, out, s, n, BLOCK=4096)
        return out
"""

SIZES = {"4MiB": (1024, 1024), "256MiB": (8192, 8192), "4GiB": (32768, 32768)}


def main(repeats: int) -> None:
    import torch

    gpu = torch.cuda.is_available()  # without one (a dry run of this script): the CPU platform, small sizes
    device, name = ("cuda:0", "h200") if gpu else ("cpu", "cpu")
    sizes = SIZES if gpu else {"64KiB": (128, 128), "1MiB": (512, 512)}
    BACKEND.prepare_process(device)
    platform = load_platform(name)
    options = yaml.safe_load(Path(f"conf/platform/{name}.yaml").read_text())["eval"]
    settings = EvalSettings(**{**options, "strict": False})
    first = True
    print(f"{'size':>7} {'n':>2} {'wall':>6}  mean seconds per stage (first evaluation of the run left out)")
    for label, (m, n) in sizes.items():
        spec = KernelSpec(
            name=f"scale_{label}",
            reference_source=REFERENCE,
            shapes=(ShapeCase("default", {"M": m, "N": n}),),
            reference_precision="framework_default",
        )
        phases: dict[str, list[float]] = defaultdict(list)
        walls = []
        for i in range(repeats):
            source = KERNEL + f"\n# variant {label} {i}\n"
            request = EvalRequest(Candidate(source, "triton", f"{label}-{i}"), spec, platform.name, settings)
            started = time.perf_counter()
            report = harness.evaluate(request, platform, device)
            wall = time.perf_counter() - started
            if report.status.value != "ok":
                print(label, i, report.status, report.feedback[:400])
            if first:
                first = False
                print(f"# first evaluation {wall:.2f} s: {report.phase_s}")
                continue
            walls.append(wall)
            timing = report.latency.get("default")
            if timing is not None:
                phases["~median_ms"].append(timing.median_ms / 1e3)  # shown in seconds like the stages
                phases["~judge_wall_ms"].append((timing.wall_ms or 0.0) / 1e3)
            for name, seconds in report.phase_s.items():
                phases[name].append(seconds)
        text = " ".join(
            f"{k}={statistics.mean(v):.3f}" for k, v in sorted(phases.items(), key=lambda kv: -sum(kv[1]))
        )
        print(f"{label:>7} {len(walls):>2} {statistics.mean(walls):6.2f}  {text}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
