"""How far cuBLAS's TF32/BF16 split (`LIBRARY_MM_FP32_PRECISION = "tf32_bf16"`) is from fp32, by K.

The tenth sample run's L2/62 (Linear 8192 -> 8192, GroupNorm with 512 groups of 16, LeakyReLU, x + x)
failed the check with the split: max abs error 2.05e-4 against 1e-4, about 20x below one TF32 pass but
about 20x above what the split's dropped lo*lo term and BF16 rounding should leave. One explanation is the
tensor cores' fp32 accumulation (truncating, not rounding) over a long K in the TF32 main term; if so,
the error grows with K and summing the main term over K chunks in fp32 shrinks it. This measures, for
K = 2048, 8192, 16384 at L2/62's M and N and its torch.rand input, each variant's error against an fp64
reference, on the GEMM's output and after L2/62's GroupNorm (where 16-value groups amplify it), and its
time. Variants: exact fp32, one TF32 pass, the seed's split (the rendered helper itself), the split with
its TF32 term summed over K chunks of 1024 and 256, and three TF32 passes (every term in fp32 output).

Run on a GPU machine from the repository root: python experiments/gemm_split_error/measure.py [OUT_DIR]
Prints a table and writes results.jsonl to OUT_DIR (default: $OUT, else the current directory).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernelevolve.variation.compiler.library_gemm import LIBRARY_GEMM_SOURCE
from kernelevolve.variation.compiler.tf32_split import TF32_SPLIT_SOURCE

M, N, GROUPS = 1024, 8192, 512
K_VALUES = (2048, 8192, 16384)
TOLERANCE = 1e-4  # KernelBench's fp32 atol and rtol


def seed_helpers() -> dict[str, Any]:
    # the split as it was measured (one TF32 GEMM over all of K; chunking came from this measurement)
    namespace: dict[str, Any] = {
        "torch": torch,
        "LIBRARY_MM_FP32_PRECISION": "tf32_bf16",
        "LIBRARY_MM_TF32_K_CHUNK": 0,
    }
    exec(TF32_SPLIT_SOURCE + LIBRARY_GEMM_SOURCE, namespace)  # noqa: S102  (our own rendered helpers)
    return namespace


def with_tf32(run: Callable[[], torch.Tensor]) -> torch.Tensor:
    matmul = torch.backends.cuda.matmul
    before, matmul.allow_tf32 = matmul.allow_tf32, True
    try:
        return run()
    finally:
        matmul.allow_tf32 = before


def split_chunked(
    helpers: dict[str, Any], chunk: int
) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The seed's split with its TF32 term summed over K chunks in fp32 (cross terms as the seed has them)."""

    def run(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a_hi, b_hi = helpers["_ke_tf32_hi"](a), helpers["_ke_tf32_hi"](b)
        out = torch.zeros(a.shape[0], b.shape[1], device=a.device)
        for start in range(0, a.shape[1], chunk):
            part = with_tf32(lambda: a_hi[:, start : start + chunk] @ b_hi[start : start + chunk])  # noqa: B023
            out.add_(part)
        a_pair = helpers["_ke_k_pair"](a, a_hi, 1, lo_first=False)
        b_pair = helpers["_ke_k_pair"](b, b_hi, 0, lo_first=True)
        return out.add_(torch.mm(a_pair, b_pair))

    return run


def three_tf32(helpers: dict[str, Any]) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    def run(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a_hi, a_lo = helpers["_ke_tf32_split"](a)
        b_hi, b_lo = helpers["_ke_tf32_split"](b)
        return with_tf32(lambda: a_lo @ b_hi + a_hi @ b_lo + a_hi @ b_hi)

    return run


def variants() -> dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]:
    helpers = seed_helpers()
    return {
        "ieee": lambda a, b: a @ b,
        "tf32": lambda a, b: with_tf32(lambda: a @ b),
        "tf32_bf16 (seed)": lambda a, b: helpers["_library_matmul"](a, b),
        "tf32_bf16, TF32 term in K chunks of 1024": split_chunked(helpers, 1024),
        "tf32_bf16, TF32 term in K chunks of 256": split_chunked(helpers, 256),
        "tf32x3": three_tf32(helpers),
    }


def worst_over_tolerance(got: torch.Tensor, expected: torch.Tensor) -> float:
    """max |got - expected| / (atol + rtol |expected|): above 1 fails KernelBench's check."""
    return float(((got.double() - expected).abs() / (TOLERANCE + TOLERANCE * expected.abs())).max())


def after_group_norm(y: torch.Tensor) -> torch.Tensor:
    """L2/62's tail in fp64: GroupNorm (no affine change at init), LeakyReLU, x + x."""
    normed = torch.nn.functional.group_norm(y.double(), GROUPS, eps=1e-5)
    return 2 * torch.nn.functional.leaky_relu(normed, 0.01)


def median_ms(run: Callable[[], Any], repeats: int = 20) -> float:
    run()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main() -> None:
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "."))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    rows = []
    for k in K_VALUES:
        a = torch.rand(M, k, device="cuda")
        weight = (torch.rand(N, k, device="cuda") * 2 - 1) / k**0.5  # nn.Linear's init bound
        b = weight.t()  # as Inductor passes a Linear's weight: a transposed view
        reference = a.double() @ b.double()
        reference_tail = after_group_norm(reference)
        for name, variant in variants().items():
            y = variant(a, b)
            error = (y.double() - reference).abs()
            rows.append(
                {
                    "k": k,
                    "variant": name,
                    "max_abs_error": float(error.max()),
                    "rms_relative_error": float(error.pow(2).mean().sqrt() / reference.pow(2).mean().sqrt()),
                    "gemm_worst_over_tolerance": worst_over_tolerance(y, reference),
                    "l2_62_worst_over_tolerance": worst_over_tolerance(after_group_norm(y), reference_tail),
                    "ms": median_ms(lambda variant=variant: variant(a, b)),
                    "device": torch.cuda.get_device_name(),
                    "torch": torch.__version__,
                }
            )
            row = rows[-1]
            print(
                f"K={k:6d} {name:42s} max|err| {row['max_abs_error']:.2e}  rms rel {row['rms_relative_error']:.2e}"
                f"  GEMM {row['gemm_worst_over_tolerance']:7.3f}  after GN {row['l2_62_worst_over_tolerance']:7.3f}"
                f"  {row['ms']:7.3f} ms",
                flush=True,
            )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


if __name__ == "__main__":
    main()
