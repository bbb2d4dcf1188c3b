"""Optimise the hot ops of a small transformer MLP stack with kernelevolve, swap the winners in, check.

    python examples/transformer_block/optimize_and_swap.py                 # CPU, tiny sizes and budget
    python examples/transformer_block/optimize_and_swap.py --swap module   # ModelNew instances, not custom ops
    python examples/transformer_block/optimize_and_swap.py --platform h200 --dim 4096 --hidden 11008 \\
        --tokens 8192 --dtype bfloat16 --budget 40 --seconds 900

Steps: run the model once with hooks to capture the inputs each hot module (RMSNorm, SwiGLU) really
receives; `kernelevolve.optimize(module, inputs)` for each; swap every instance of that module for
the winner -- a `torch.library` custom op wrapping the module (`--swap op`, traceable by
torch.compile, falls back to PyTorch at shapes that were not searched) or the winning ModelNew
carrying that instance's weights (`--swap module`); check the model's output still matches (by
norm-relative error, `REL_TOLERANCE`); time the model end to end before and after. On the CPU
Triton runs under its interpreter, so the swapped model is much slower there: the CPU run checks
the plumbing, a GPU run measures speed.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the repository root, for `examples.transformer_block.model`

# Largest ||swapped - original|| / ||original|| of the model's output. Norm-relative, not elementwise:
# through a stack of bf16 blocks a few elements drift by several ulps (0.09 at |x| ~ 8) even when
# every kernel is within tolerance, while a wrong kernel moves the whole output.
REL_TOLERANCE = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 1e-2}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--platform", default="cpu")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=48)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=6, help="batch * sequence length")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--budget", type=int, default=3, help="evaluations per op")
    parser.add_argument("--seconds", type=float, default=None, help="wall-clock budget per op")
    parser.add_argument("--operators", default="template,fusion_seed,tune")
    parser.add_argument("--swap", default="op", choices=["op", "module"])
    parser.add_argument("--run-root", default="runs/examples")
    parser.add_argument("--trials", type=int, default=5, help="timed forward passes, before and after")
    parser.add_argument("--quick", action="store_true", help="few harness trials, no torch.compile baseline")
    parser.add_argument("--json", type=Path, default=None, help="also write the summary here")
    return parser.parse_args(argv)


def capture_inputs(model: Any, x: Any, classes: tuple[type, ...]) -> dict[type, tuple[Any, Any]]:
    """class -> (first instance, the inputs it received) from one forward pass."""
    import torch

    seen: dict[type, tuple[Any, Any]] = {}
    hooks = []
    for module in model.modules():
        if type(module) in classes:

            def hook(mod: Any, args: tuple[Any, ...]) -> None:
                seen.setdefault(type(mod), (mod, tuple(a.detach().clone() for a in args)))

            hooks.append(module.register_forward_pre_hook(hook))
    with torch.no_grad():
        model(x)
    for handle in hooks:
        handle.remove()
    return seen


def swap_in(model: Any, cls: type, result: Any, mode: str) -> tuple[int, Any]:
    """Replace every `cls` instance in `model`; returns (count, the KernelOp or None)."""
    targets = [(name, m) for name, m in model.named_modules() if type(m) is cls]
    op = result.custom_op() if mode == "op" else None
    for name, module in targets:
        parent = model.get_submodule(name.rpartition(".")[0]) if "." in name else model
        if op is not None:
            new = op.wrap(module)
        else:
            new = result.as_module()
            new.load_state_dict(module.state_dict())  # this instance's weights, not the optimised one's
        setattr(parent, name.rpartition(".")[2], new)
    return len(targets), op


def relative_error(got: Any, expected: Any) -> float:
    """||got - expected|| / ||expected|| over all elements, in fp64 (inf if got is not finite)."""
    out, ref = got.detach().double(), expected.detach().double()
    if not bool(out.isfinite().all()):
        return math.inf
    scale = float(ref.norm())
    error = float((out - ref).norm())
    return error / scale if scale > 0 else error


def time_model(model: Any, x: Any, trials: int) -> float:
    """Median wall time of a forward pass in ms (synchronised on CUDA), after one warm-up."""
    import torch

    def sync() -> None:
        if x.is_cuda:
            torch.cuda.synchronize()

    samples = []
    with torch.no_grad():
        model(x)
        for _ in range(trials):
            sync()
            start = time.perf_counter()
            model(x)
            sync()
            samples.append((time.perf_counter() - start) * 1e3)
    samples.sort()
    return samples[len(samples) // 2]


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    import kernelevolve
    from examples.transformer_block.model import RMSNorm, SwiGLU, build_model

    device = "cpu" if args.platform == "cpu" else "cuda"
    dtype = getattr(torch, args.dtype)
    model = build_model(args.dim, args.hidden, args.depth).to(device=device, dtype=dtype)
    torch.manual_seed(1)
    x = torch.randn(args.tokens, args.dim, device=device, dtype=dtype)
    reference = copy.deepcopy(model)
    with torch.no_grad():
        expected = reference(x)
    overrides = ["kb.enabled=false"]
    if args.quick:
        overrides += [
            "platform.eval.timing_trials=2",
            "platform.eval.correctness_trials=2",
            "platform.eval.warmup_trials=1",
            "platform.eval.measure_compile_baseline=false",
        ]
    budget = kernelevolve.Budget(max_evaluations=args.budget, seconds=args.seconds)
    summary: dict[str, Any] = {"platform": args.platform, "swap": args.swap, "ops": {}}
    ops = []
    for cls, (module, inputs) in capture_inputs(model, x, (RMSNorm, SwiGLU)).items():
        result = kernelevolve.optimize(
            module,
            inputs,
            platform=args.platform,
            budget=budget,
            operators=args.operators.split(","),
            run_root=args.run_root,
            overrides=overrides,
        )
        print(
            f"{cls.__name__}: best {result.best_id} ({result.backend}), "
            f"{result.speedup_vs_eager or 0:.3f}x vs eager in the search; run {result.run_dir}"
        )
        entry: dict[str, Any] = {
            "best": result.best_id,
            "speedup_vs_eager": result.speedup_vs_eager,
            "run_dir": str(result.run_dir),
        }
        if result.found:
            count, op = swap_in(model, cls, result, args.swap)
            entry["swapped"] = count
            if op is not None:
                entry["op"] = op.qualname
                ops.append((cls.__name__, op))
        summary["ops"][cls.__name__] = entry
    with torch.no_grad():
        got = model(x)
    summary["max_abs_diff"] = float((got.float() - expected.float()).abs().max())
    summary["rel_error"] = relative_error(got, expected)
    summary["rel_tolerance"] = REL_TOLERANCE[args.dtype]
    summary["matches"] = summary["rel_error"] <= summary["rel_tolerance"]
    summary["eager_ms"] = time_model(reference, x, args.trials)
    summary["swapped_ms"] = time_model(model, x, args.trials)
    summary["speedup"] = summary["eager_ms"] / summary["swapped_ms"]
    for name, op in ops:
        summary["ops"][name]["paths"] = dict(op.counts)
    print(
        f"output matches the original model: {summary['matches']} (relative error {summary['rel_error']:.3g}, "
        f"tolerance {summary['rel_tolerance']:g}; max abs diff {summary['max_abs_diff']:.3g})"
    )
    print(
        f"end to end: {summary['eager_ms']:.3f} ms before, {summary['swapped_ms']:.3f} ms after "
        f"({summary['speedup']:.3f}x)"
    )
    for name, op in ops:
        print(f"{name} op {op.qualname}: calls by path {dict(op.counts)}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return summary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    summary = run(args)
    return 0 if summary["matches"] else 1


if __name__ == "__main__":  # evaluation workers are spawned and re-import this file: keep the guard
    sys.exit(main())
