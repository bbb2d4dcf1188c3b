"""Check every CuTe template on a GPU: compile, compare with the reference, time next to eager and torch.compile.

Run on the GPU machine (H200 by default) from the repository root:

    python experiments/cute_gpu_check.py                      # all templates, the spec's GPU shapes
    python experiments/cute_gpu_check.py --templates softmax --trials 50 --platform h100

For each template in kernelevolve/variation/templates/cute the shipped spec of its family (operators/spec)
gives the dtype, tolerance and benchmark shapes. Per shape it reports compile time, max abs error and
pass/fail at the spec's tolerance, and median CUDA-event latency (L2 flushed between trials) of the
template, PyTorch eager and torch.compile, with speedups. Prints a table and writes JSON to
$OUT/cute_gpu_check.json (or --out). A failure at one shape is recorded and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEMPLATE_DIR = ROOT / "kernelevolve" / "variation" / "templates" / "cute"
HEADER = re.compile(r"^# kernelevolve-template: name=(\S+) family=(\S+) backend=(\S+)", re.MULTILINE)


def templates(selected: list[str]) -> list[tuple[Path, str, str]]:
    found = []
    for path in sorted(TEMPLATE_DIR.glob("*.py")):
        match = HEADER.search(path.read_text())
        if not match:
            continue
        name, family, _ = match.groups()
        if not selected or any(s in (path.stem, name, family) for s in selected):
            found.append((path, name, family))
    return found


def max_abs_error(actual: Any, expected: Any) -> float:
    return float((actual.float() - expected.float()).abs().max().item()) if expected.numel() else 0.0


def run_shape(module: Any, spec: Any, shape: Any, args: argparse.Namespace, l2_bytes: int) -> dict[str, Any]:
    import torch

    from kernelevolve.eval.reference import apply_shape, build_model, load_reference, make_inputs, torch_dtype
    from kernelevolve.eval.timers import time_callable

    row: dict[str, Any] = {"shape": shape.name, "params": dict(shape.params)}
    reference = load_reference(spec.reference_source)
    apply_shape(reference, shape)
    dtype = torch_dtype(spec.dtype)
    model = build_model(reference.Model, reference, args.seed, "cuda", dtype)
    candidate = build_model(module.ModelNew, reference, args.seed, "cuda", dtype)
    input_sets = [make_inputs(reference, args.seed + i, "cuda", dtype) for i in range(args.input_sets)]

    started = time.perf_counter()
    candidate.compile_kernels(*input_sets[0])
    row["compile_s"] = round(time.perf_counter() - started, 3)
    with torch.no_grad():
        worst = 0.0
        passed = True
        for inputs in input_sets:
            expected = model(*inputs)
            actual = candidate(*inputs)
            torch.cuda.synchronize()
            worst = max(worst, max_abs_error(actual, expected))
            passed = passed and torch.allclose(actual, expected, atol=spec.atol, rtol=spec.rtol)
    row["max_abs_error"] = worst
    row["correct"] = bool(passed)

    timing = {"trials": args.trials, "warmup": args.warmup, "flush_l2": True, "l2_bytes": l2_bytes}
    row["cute_ms"] = time_callable(candidate, input_sets, "cuda", **timing).median_ms
    row["eager_ms"] = time_callable(model, input_sets, "cuda", **timing).median_ms
    if args.no_compile:
        row["compiled_ms"] = None
    else:
        try:
            compiled = torch.compile(model)
            row["compiled_ms"] = time_callable(compiled, input_sets, "cuda", **timing).median_ms
        except Exception as exc:  # a torch.compile failure is reported, not fatal
            row["compiled_ms"] = None
            row["compile_baseline_error"] = f"{type(exc).__name__}: {exc}"[:500]
    row["speedup_vs_eager"] = row["eager_ms"] / row["cute_ms"]
    row["speedup_vs_compile"] = row["compiled_ms"] / row["cute_ms"] if row["compiled_ms"] else None
    del model, candidate, input_sets
    torch.cuda.empty_cache()
    return row


def fmt(value: Any, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--templates", nargs="*", default=[], help="file stems, template names or families")
    parser.add_argument(
        "--platform", default="h200", help="platform yaml giving the spec's shapes and L2 size"
    )
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--input-sets", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for cute_gpu_check.json")
    args = parser.parse_args()

    import cutlass
    import torch

    from kernelevolve.backends.cute import BACKEND, describe_exception
    from kernelevolve.platforms import load_platform
    from kernelevolve.specs import resolve_spec

    if not torch.cuda.is_available():
        print("no CUDA device: this script needs a GPU", file=sys.stderr)
        return 2
    platform = load_platform(args.platform)
    BACKEND.prepare_process("cuda")
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "capability": list(torch.cuda.get_device_capability()),
        "torch": torch.__version__,
        "cutlass_dsl": getattr(cutlass, "__version__", "?"),
        "platform": platform.name,
        "trials": args.trials,
        "rows": [],
    }
    for path, name, family in templates(args.templates):
        spec = resolve_spec(family, platform)
        module = BACKEND.load(path.read_text(), f"cute_gpu_check_{path.stem}")
        for shape in spec.shapes:
            base = {"template": name, "family": family, "dtype": spec.dtype}
            try:
                row = {**base, **run_shape(module, spec, shape, args, platform.l2_bytes)}
            except Exception as exc:
                row = {
                    **base,
                    "shape": shape.name,
                    "params": dict(shape.params),
                    "error": f"{type(exc).__name__}: {describe_exception(exc)}",
                    "status": BACKEND.classify_error(exc, "run").value,
                    "traceback": traceback.format_exc()[-3000:],
                }
                torch.cuda.empty_cache()
            result["rows"].append(row)
            print(
                f"{name:28s} {row['shape']:22s} "
                + (
                    f"ERROR {row['error'][:100]}"
                    if "error" in row
                    else f"ok={row['correct']!s:5s} err={row['max_abs_error']:.2e} compile={row['compile_s']:.2f}s "
                    f"cute={fmt(row['cute_ms'])}ms eager={fmt(row['eager_ms'])}ms compiled={fmt(row['compiled_ms'])}ms "
                    f"x_eager={fmt(row['speedup_vs_eager'], '.2f')} x_compile={fmt(row['speedup_vs_compile'], '.2f')}"
                ),
                flush=True,
            )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cute_gpu_check.json").write_text(json.dumps(result, indent=2))
    print(f"wrote {out / 'cute_gpu_check.json'}")
    return 0 if all(r.get("correct") for r in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
