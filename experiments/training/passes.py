"""The baselines' passes apart: eager and torch.compile, forward alone and forward + backward, per training spec
and shape, timed by the harness's timer (CUDA events, L2 flushed) on the judge's training step.

Usage (device machine, repo root): python3 experiments/training/passes.py train_rmsnorm [train_... ...]
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from kernelevolve.eval import timers
from kernelevolve.platforms import Platform, load_platform
from kernelevolve.specs import reference
from kernelevolve.specs.loading import resolve_spec
from kernelevolve.specs.training import judged_source
from kernelevolve.types import KernelSpec, ShapeCase


def _time(fn: Any, inputs: list[Any], platform: Platform) -> float:
    stats = timers.time_callable(
        fn,
        [inputs],
        "cuda",
        trials=30,
        warmup=5,
        flush_l2=True,
        l2_bytes=platform.l2_bytes,
        launch_cover_us=100.0,
    )
    return stats.median_ms


def _shape_figures(spec: KernelSpec, shape: ShapeCase, platform: Platform) -> list[float]:
    module = reference.load_reference(judged_source(spec))
    reference.apply_shape(module, shape)
    dtype = reference.torch_dtype(spec.dtype)
    step = reference.build_model(module.Model, module, 0, "cuda", dtype, spec.mode)
    inputs = reference.make_inputs(module, 1, "cuda", dtype, on_device=True)
    torch._dynamo.reset()
    figures = [_time(step.forward_pass, inputs, platform), _time(step, inputs, platform)]
    figures.append(_time(step.compiled(forward_only=True), inputs, platform))
    torch._dynamo.reset()
    figures.append(_time(step.compiled(), inputs, platform))
    return figures


def main(names: list[str]) -> None:
    platform = load_platform("h200")
    print("| spec | shape | eager fwd ms | eager fwd+bwd ms | compile fwd ms | compile fwd+bwd ms |")
    print("|---|---|---|---|---|---|")
    for name in names:
        spec = resolve_spec(name, platform)
        for shape in spec.shapes:
            figures = _shape_figures(spec, shape, platform)
            print(f"| {name} | {shape.name} | " + " | ".join(f"{f:.3f}" for f in figures) + " |", flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
