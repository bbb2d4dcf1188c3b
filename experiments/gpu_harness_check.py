"""How reproducible are the harness's GPU timings? Time the same kernels in two separate processes.

For each spec below, each of `--runs` runs starts its own LocalEvaluator (a fresh child process,
fresh CUDA context, empty baseline cache) and evaluates the same Triton kernel. The script prints
per shape the kernel's median in every run, the spread between runs, and the eager baseline's
spread, then writes everything to --out as JSON.

    python experiments/gpu_harness_check.py --platform h200 --runs 2 --out experiments/gpu_harness_check.json

Options: --specs add,softmax,matmul  --timing-trials 100  --warmup-trials 10  --device cuda:0
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelevolve.eval.local import LocalEvaluator  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, ShapeCase  # noqa: E402

HEADER = "import torch\nimport torch.nn as nn\n"
KERNEL_HEADER = HEADER + "import triton\nimport triton.language as tl\n"

SPECS = {
    "add": dict(
        reference=HEADER
        + """
class Model(nn.Module):
    def forward(self, x, y):
        return x + y

n = 1 << 20
def get_inputs():
    return [torch.randn(n), torch.randn(n)]
def get_init_inputs():
    return []
""",
        kernel=KERNEL_HEADER
        + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_warps=4)
        return out
""",
        shapes=(ShapeCase("n1M", {"n": 1 << 20}), ShapeCase("n64M", {"n": 1 << 26})),
        dtype="float32",
        tolerance=1e-5,
    ),
    "softmax": dict(
        reference=HEADER
        + """
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)

batch = 4096
dim = 1024
def get_inputs():
    return [torch.randn(batch, dim)]
def get_init_inputs():
    return []
""",
        kernel=KERNEL_HEADER
        + """
@triton.jit
def softmax_kernel(x_ptr, out_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, num / tl.sum(num, axis=0), mask=mask)

class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        rows, cols = x.shape
        softmax_kernel[(rows,)](x, out, x.stride(0), cols, BLOCK=triton.next_power_of_2(cols), num_warps=8)
        return out
""",
        shapes=(ShapeCase("4096x1024", {"batch": 4096, "dim": 1024}), ShapeCase("8192x4096", {"batch": 8192, "dim": 4096})),
        dtype="float32",
        tolerance=1e-5,
    ),
    "matmul": dict(
        reference=HEADER
        + """
class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)

size = 1024
def get_inputs():
    return [torch.randn(size, size), torch.randn(size, size)]
def get_init_inputs():
    return []
""",
        kernel=KERNEL_HEADER
        + """
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a_mask = (rm[:, None] < M) & ((k + rk)[None, :] < K)
        b_mask = ((k + rk)[:, None] < K) & (rn[None, :] < N)
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak, mask=a_mask, other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn, mask=b_mask, other=0.0)
        acc += tl.dot(a, b)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty), mask=c_mask)

class ModelNew(nn.Module):
    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
        return c
""",
        shapes=(ShapeCase("1024", {"size": 1024}), ShapeCase("4096", {"size": 4096})),
        dtype="bfloat16",
        tolerance=2e-2,
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--platform", default="h200")
    parser.add_argument("--specs", default=",".join(SPECS))
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--timing-trials", type=int, default=100)
    parser.add_argument("--warmup-trials", type=int, default=10)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--compile-baseline", action="store_true", help="also time torch.compile")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    platform = load_platform(args.platform)
    settings = EvalSettings(
        timing_trials=args.timing_trials,
        warmup_trials=args.warmup_trials,
        measure_compile_baseline=args.compile_baseline,
        max_speedup=float("inf"),  # measuring, not searching: no re-verification runs
    )
    rows = []
    for name in args.specs.split(","):
        entry = SPECS[name]
        tolerance = float(entry["tolerance"])  # type: ignore[arg-type]
        spec = KernelSpec(
            name=f"harness_check_{name}",
            reference_source=str(entry["reference"]),
            dtype=str(entry["dtype"]),
            atol=tolerance,
            rtol=tolerance,
            shapes=tuple(entry["shapes"]),  # type: ignore[arg-type]
        )
        runs = []
        for run in range(args.runs):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["KERNELEVOLVE_CACHE"] = cache  # every run measures its own baselines
                start = time.perf_counter()
                with LocalEvaluator(platform, settings, devices=[args.device]) as evaluator:
                    candidate = Candidate(str(entry["kernel"]), "triton", "harness_check")
                    report = evaluator.submit(EvalRequest(candidate, spec, platform.name, settings)).result()
                    baselines = evaluator.baselines(spec, platform.name)
            if not report.ok:
                print(f"{name} run {run}: {report.status.value} {report.error_name}\n{report.feedback}")
                return 1
            runs.append((report, baselines, time.perf_counter() - start))
        for shape in spec.shapes:
            kernel = [r.latency[shape.name].median_ms for r, _, _ in runs]
            eager = [b[shape.name].eager.median_ms for _, b, _ in runs]
            rows.append(
                {
                    "spec": name,
                    "shape": shape.name,
                    "kernel_median_ms": kernel,
                    "eager_median_ms": eager,
                    "kernel_spread_pct": 100 * (max(kernel) - min(kernel)) / statistics.mean(kernel),
                    "eager_spread_pct": 100 * (max(eager) - min(eager)) / statistics.mean(eager),
                    "kernel_std_ms": [r.latency[shape.name].std_ms for r, _, _ in runs],
                    "worker": [r.worker for r, _, _ in runs],
                    "wall_s": [w for _, _, w in runs],
                }
            )
    print(f"{'spec':<9}{'shape':<12}{'kernel medians (ms)':<28}{'spread':>8}{'eager medians (ms)':>28}{'spread':>8}")
    for row in rows:
        kernel = ", ".join(f"{v:.4f}" for v in row["kernel_median_ms"])
        eager = ", ".join(f"{v:.4f}" for v in row["eager_median_ms"])
        print(
            f"{row['spec']:<9}{row['shape']:<12}{kernel:<28}{row['kernel_spread_pct']:>7.2f}%"
            f"{eager:>28}{row['eager_spread_pct']:>7.2f}%"
        )
    if args.out:
        args.out.write_text(json.dumps({"platform": platform.name, "settings": settings.to_json(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
