"""One pass over reference and output on a GPU: does the output pass the value check, and its max error.

The chunked torch comparison in `correctness` makes about twenty passes over both tensors (finite
masks, differences, `isclose`'s temporaries); at KernelBench's level-1 sizes (6.4 GB outputs) that was
0.1 s a trial under the device lock, most of a correctness check. This kernel reads each element of
both once and sums, per program, what the check needs to pass: positions the reference has finite and
the output not (unwritten), positions not close as `torch.isclose(out, ref, atol, rtol, equal_nan=True)`
decides, and the largest |out - ref| where both are finite. Where either count is non-zero the caller
runs the torch comparison, which finds the indices and values its feedback quotes.

The arithmetic is torch's own in float32: |out - ref| and atol + |rtol * ref| each rounded once (no
fused multiply-add), so a value on the tolerance's edge gets the verdict `isclose` gives it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import triton
import triton.language as tl

if TYPE_CHECKING:
    import torch

BLOCK = 1024
BLOCKS_PER_PROGRAM = 32
SUPPORTED_DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class ValueSummary:
    unwritten: int  # reference finite, output not
    not_close: int  # positions isclose(out, ref, atol, rtol, equal_nan=True) rejects
    max_error: float  # largest |out - ref| where both are finite

    @property
    def passes(self) -> bool:
        return self.unwritten == 0 and self.not_close == 0


@triton.jit
def _summarise_kernel(
    ref_ptr,
    out_ptr,
    unwritten_ptr,
    not_close_ptr,
    max_error_ptr,
    n,
    atol,
    rtol,
    BLOCK: tl.constexpr,
    BLOCKS_PER_PROGRAM: tl.constexpr,
):
    program = tl.program_id(0)
    start = program.to(tl.int64) * BLOCK * BLOCKS_PER_PROGRAM
    lanes = tl.arange(0, BLOCK)
    unwritten = tl.zeros([BLOCK], dtype=tl.int32)
    not_close = tl.zeros([BLOCK], dtype=tl.int32)
    worst = tl.zeros([BLOCK], dtype=tl.float32)
    for block in range(BLOCKS_PER_PROGRAM):
        offsets = start + block * BLOCK + lanes
        inside = offsets < n
        ref = tl.load(ref_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
        out = tl.load(out_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
        ref_finite = tl.abs(ref) < float("inf")  # NaN compares false
        out_finite = tl.abs(out) < float("inf")
        error = tl.abs(out - ref)
        allowed = atol + tl.abs(rtol * ref)
        close = (out == ref) | ((out != out) & (ref != ref)) | ((error < float("inf")) & (error <= allowed))
        unwritten += (inside & ref_finite & ~out_finite).to(tl.int32)
        not_close += (inside & ~close).to(tl.int32)
        worst = tl.where(inside & ref_finite & out_finite, tl.maximum(worst, error), worst)
    tl.store(unwritten_ptr + program, tl.sum(unwritten, axis=0))
    tl.store(not_close_ptr + program, tl.sum(not_close, axis=0))
    tl.store(max_error_ptr + program, tl.max(worst, axis=0))


def applies(ref: torch.Tensor, out: torch.Tensor) -> bool:
    """On a GPU, same float dtype of at most 32 bits (float64 keeps the torch path's float64 arithmetic)."""
    return (
        ref.device.type == "cuda"
        and out.device == ref.device
        and ref.dtype == out.dtype
        and str(ref.dtype).removeprefix("torch.") in SUPPORTED_DTYPES
        and ref.numel() == out.numel()
        and ref.numel() > 0
    )


def summarise(ref: torch.Tensor, out: torch.Tensor, atol: float, rtol: float) -> ValueSummary:
    """The one-pass summary of `out` against `ref` (see `applies`); waits for the device once."""
    import torch

    ref_flat = ref.detach().reshape(-1)
    out_flat = out.detach().reshape(-1)
    n = ref_flat.numel()
    programs = triton.cdiv(n, BLOCK * BLOCKS_PER_PROGRAM)
    unwritten = torch.empty(programs, dtype=torch.int32, device=ref.device)
    not_close = torch.empty(programs, dtype=torch.int32, device=ref.device)
    max_error = torch.empty(programs, dtype=torch.float32, device=ref.device)
    on_device = torch.cuda.device(ref.device) if ref.device.type == "cuda" else contextlib.nullcontext()
    with on_device:  # the kernel launches on the tensors' GPU, whichever is current
        _summarise_kernel[(programs,)](
            ref_flat,
            out_flat,
            unwritten,
            not_close,
            max_error,
            n,
            float(atol),
            float(rtol),
            BLOCK=BLOCK,
            BLOCKS_PER_PROGRAM=BLOCKS_PER_PROGRAM,
            enable_fp_fusion=False,  # atol + |rtol * ref| rounded as torch rounds it
        )
    totals = torch.stack(
        [
            unwritten.sum(dtype=torch.int64).double(),
            not_close.sum(dtype=torch.int64).double(),
            max_error.max().double(),
        ]
    ).tolist()
    return ValueSummary(int(totals[0]), int(totals[1]), float(totals[2]))
