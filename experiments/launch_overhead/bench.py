"""Host time to issue one launch: Triton's JIT path against the size of its argument list, our GEMM helper
(`_matmul`, 40 arguments) at the step sizes of host-bound strict results, and cuBLAS at the same sizes.

Strict level-3 results are often host-bound (L3/34: 49 ms strict, 3.7 ms as a CUDA graph; L3/32: 1.77 ms,
0.25 ms): this measures where the host's time per launch goes before any launch-path change is made.
Usage on a GPU machine: python experiments/launch_overhead/bench.py [OUT_DIR]
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelevolve.variation.compiler.own_gemm import GEMM_SOURCE, GEMM_TUNABLES  # noqa: E402

CALLS = 2000
REPEATS = 5


@triton.jit
def noop_two(out_ptr, n):
    tl.store(out_ptr + tl.program_id(0), n)


@triton.jit
def noop_many(
    out_ptr,
    a1,
    a2,
    a3,
    a4,
    a5,
    a6,
    a7,
    a8,
    a9,
    a10,
    a11,
    a12,
    a13,
    a14,
    a15,
    a16,
    a17,
    a18,
    a19,
    a20,
    p1,
    p2,
    p3,
    p4,
    p5,
    FLAG_A: tl.constexpr,
    FLAG_B: tl.constexpr,
    BLOCK: tl.constexpr,
):
    tl.store(out_ptr + tl.program_id(0), a1 + a20)


def gemm_module() -> object:
    source = "\n".join(
        ["import torch", "import triton", "import triton.language as tl", *GEMM_TUNABLES, GEMM_SOURCE]
    )
    path = Path(tempfile.mkdtemp()) / "own_gemm_bench.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("own_gemm_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def direct_launcher(kernel, args: tuple, constexprs: dict):
    """The compiled kernel's own launcher called with the arguments as the JIT path passes them, skipping
    its binder, specialisation and cache lookup (what a cached launch path would do). None where this
    Triton's internals differ from 3.6's."""
    try:
        compiled = kernel[(1,)](*args, **constexprs)  # the JIT path returns the kernel it launched
        values = (*args, *constexprs.values())
        stream = torch.cuda.current_stream().cuda_stream
        from triton import knobs

        def launch() -> None:
            metadata = compiled.launch_metadata((1, 1, 1), stream, *values)
            compiled.run(
                1,
                1,
                1,
                stream,
                compiled.function,
                compiled.packed_metadata,
                metadata,
                knobs.runtime.launch_enter_hook,
                knobs.runtime.launch_exit_hook,
                *values,
            )

        launch()
        torch.cuda.synchronize()
        return launch
    except Exception as exc:  # noqa: BLE001 - a bench row, not a verdict
        print(f"direct launch not measured: {type(exc).__name__}: {exc}")
        return None


def per_call_us(call) -> dict[str, float]:
    """Wall time per call over CALLS calls issued back to back (the host's issue time where it exceeds the
    GPU's), and the GPU's time per call from events around the same loop, medians of REPEATS."""
    for _ in range(20):
        call()
    torch.cuda.synchronize()
    walls, gpus = [], []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        began = time.perf_counter()
        for _ in range(CALLS):
            call()
        issued = time.perf_counter()
        end.record()
        torch.cuda.synchronize()
        walls.append((issued - began) / CALLS * 1e6)
        gpus.append(start.elapsed_time(end) / CALLS * 1e3)
    return {"host_us_per_call": statistics.median(walls), "gpu_us_per_call": statistics.median(gpus)}


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")
    out_dir.mkdir(parents=True, exist_ok=True)
    device = "cuda"
    buf = torch.zeros(16, device=device)
    ints = list(range(1, 21))
    ptrs = [buf] * 5
    gemm = gemm_module()
    rows: dict[str, dict[str, float]] = {}
    rows["triton noop, 2 args"] = per_call_us(lambda: noop_two[(1,)](buf, 3))
    rows["triton noop, 25 args + 3 constexpr"] = per_call_us(
        lambda: noop_many[(1,)](buf, *ints, *ptrs, FLAG_A=True, FLAG_B=False, BLOCK=16)
    )
    for m, k, n, label in [
        (8, 1280, 256, "L3/34 step i2h"),
        (8, 256, 128, "L3/34 step h2o"),
        (20, 128, 384, "L3/32 qkv"),
        (20, 128, 512, "L3/32 ffn1"),
    ]:
        a = torch.randn(m, k, device=device)
        w = torch.randn(n, k, device=device)
        bias = torch.randn(n, device=device)
        rows[f"_matmul {label} ({m}x{k}x{n})"] = per_call_us(
            lambda a=a, w=w, bias=bias: gemm._matmul(a, w.t(), bias=bias)
        )
        rows[f"torch.addmm {label}"] = per_call_us(lambda a=a, w=w, bias=bias: torch.addmm(bias, a, w.t()))
        if hasattr(gemm, "_ke_mm_plans"):  # _matmul's launch worked out on every call, as before the plans

            def unplanned(a=a, w=w, bias=bias) -> None:
                gemm._ke_mm_plans.clear()
                gemm._matmul(a, w.t(), bias=bias)

            rows[f"_matmul {label}, no plan kept"] = per_call_us(unplanned)
    direct = direct_launcher(noop_many, (buf, *ints, *ptrs), {"FLAG_A": True, "FLAG_B": False, "BLOCK": 16})
    if direct is not None:
        rows["triton noop, 25 args + 3 constexpr, compiled kernel launched directly"] = per_call_us(direct)
    rows["torch.empty (8, 256)"] = per_call_us(lambda: torch.empty((8, 256), device=device))
    width = max(map(len, rows))
    print(f"{'what':<{width}}  host us/call  gpu us/call")
    for name, row in rows.items():
        print(f"{name:<{width}}  {row['host_us_per_call']:>12.1f}  {row['gpu_us_per_call']:>11.1f}")
    record = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "calls": CALLS,
        "repeats": REPEATS,
        "rows": rows,
    }
    (out_dir / "launch_overhead.json").write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
