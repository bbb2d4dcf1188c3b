"""Output values against the reference's, a slice at a time: NaNs and infinities where the reference has
finite values (unwritten output), values outside the tolerance, and the worst error with where it is.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

# Values are compared a slice at a time: KernelBench's level-1 outputs reach 6.4 GB, and whole-tensor
# temporaries (differences, masks, fp32 copies) would need several times that next to the inputs and
# outputs, enough to run a GPU shared by several evaluations out of memory.
COMPARE_CHUNK_ELEMENTS = 1 << 24
# An integer output's whole-atol step (a quantizer's 1.0) is for rounding ties. Honest kernels meet them at
# up to 2.75% of elements on the timed calls' refreshed inputs (round half away against half to even,
# `tests/adversarial/good/quantize_int8_*`; 0.1% on plain bf16 rows); a kernel that rounds otherwise steps
# far more often (truncation toward zero at about half of them:
# `tests/adversarial/hacks/quantize_int8_truncates_within_step.py`), so a step is allowed at no more than
# one element in `STEP_SHARE`
STEP_SHARE = 8
_one_pass_broken: list[str] = []  # why the GPU summary is off in this process, once it has failed


@dataclass
class _ValueScan:
    """What a chunked pass over reference and output finds (flat indices into the whole tensor)."""

    unwritten: int = 0  # reference finite, output not
    first_unwritten: int = -1
    max_error: float = 0.0  # over positions where both are finite
    all_close: bool = True
    out_of_tolerance: int = 0  # finite positions beyond atol + rtol*|ref|
    worst_excess: float = -math.inf
    worst_excess_at: int = -1
    non_finite_mismatch: int = 0  # reference non-finite and output different
    first_non_finite_mismatch: int = -1
    stepped: int = 0  # integer outputs: elements off by a step within the whole atol (`STEP_SHARE`)


def _scan_values(ref: torch.Tensor, out: torch.Tensor, atol: float, rtol: float) -> _ValueScan:
    if ref.is_complex():
        return _scan_values(*_real_views(ref, out), atol, rtol)
    if not ref.is_floating_point():
        return _exact_scan(ref, out, atol)
    summary = _one_pass_summary(ref, out, atol, rtol)
    if summary is not None and summary.passes:
        return _ValueScan(max_error=summary.max_error)
    return _chunked_scan(ref, out, atol, rtol)  # on the CPU, and where a value fails: its indices and values


def values_within(ref: torch.Tensor, out: torch.Tensor, atol: float, rtol: float) -> tuple[bool, float]:
    """Whether `out` passes the value check against `ref`, and the largest error where both are finite:
    no positions or counts, which only a failure's feedback quotes. On a GPU the one-pass summary answers
    both ways; the chunked scan (about twenty passes over both tensors) made each failing comparison cost
    0.1 s on a 6.4 GB output, and the kernel-share calls fail on purpose for an honest kernel."""
    if ref.is_complex():
        return values_within(*_real_views(ref, out), atol, rtol)
    if not ref.is_floating_point():
        scan = _exact_scan(ref, out, atol)
    elif (summary := _one_pass_summary(ref, out, atol, rtol)) is not None:
        return summary.passes, summary.max_error
    else:
        scan = _chunked_scan(ref, out, atol, rtol)
    return scan.all_close and not scan.unwritten and not scan.non_finite_mismatch, scan.max_error


def _one_pass_summary(ref: torch.Tensor, out: torch.Tensor, atol: float, rtol: float) -> Any:
    """The GPU's one-pass `compare_kernel.ValueSummary`, or None where it does not apply or cannot run."""
    if ref.device.type != "cuda" or _one_pass_broken:
        return None
    try:
        from kernelevolve.eval import compare_kernel

        if not compare_kernel.applies(ref, out):
            return None
        return compare_kernel.summarise(ref, out, atol, rtol)
    except Exception as exc:  # noqa: BLE001 - the torch comparison below gives the verdict anyway
        if is_device_fault(exc):
            raise  # a fault of the candidate's kernels surfacing here is the candidate's
        _one_pass_broken.append(f"{type(exc).__name__}: {exc}")
        log.warning("one-pass value comparison off in this process: %s", _one_pass_broken[0])
        return None


_DEVICE_FAULT = re.compile(
    r"CUDA error|HIP error|illegal memory access|device-side assert|misaligned address"
)


def is_device_fault(exc: BaseException) -> bool:
    """A device error (a kernel's fault, possibly surfacing late), not a Python one."""
    return type(exc).__name__ == "AcceleratorError" or bool(_DEVICE_FAULT.search(str(exc)))


def _chunked_scan(ref: torch.Tensor, out: torch.Tensor, atol: float, rtol: float) -> _ValueScan:
    import torch

    work = torch.float64 if ref.dtype == torch.float64 else torch.float32
    ref_flat, out_flat = ref.detach().reshape(-1), out.detach().reshape(-1)
    scan = _ValueScan()
    for start in range(0, ref_flat.numel(), COMPARE_CHUNK_ELEMENTS):
        ref_w = ref_flat[start : start + COMPARE_CHUNK_ELEMENTS].to(work)
        out_w = out_flat[start : start + COMPARE_CHUNK_ELEMENTS].to(work)
        ref_finite, out_finite = torch.isfinite(ref_w), torch.isfinite(out_w)
        unwritten = ref_finite & ~out_finite
        count = int(unwritten.sum())
        if count and scan.first_unwritten < 0:
            scan.first_unwritten = start + int(torch.nonzero(unwritten)[0])
        scan.unwritten += count
        both = ref_finite & out_finite
        diff = torch.where(both, (out_w - ref_w).abs(), torch.zeros_like(ref_w))
        scan.max_error = max(scan.max_error, float(diff.max()))
        if scan.unwritten or bool(torch.isclose(out_w, ref_w, atol=atol, rtol=rtol, equal_nan=True).all()):
            continue
        scan.all_close = False
        excess = torch.where(both, diff - (atol + rtol * ref_w.abs()), torch.full_like(ref_w, -math.inf))
        scan.out_of_tolerance += int((excess > 0).sum())
        worst = int(torch.argmax(excess))
        if float(excess[worst]) > scan.worst_excess:
            scan.worst_excess, scan.worst_excess_at = float(excess[worst]), start + worst
        mismatch = ~ref_finite & (out_w != ref_w) & ~(torch.isnan(out_w) & torch.isnan(ref_w))
        count = int(mismatch.sum())
        if count and scan.first_non_finite_mismatch < 0:
            scan.first_non_finite_mismatch = start + int(torch.nonzero(mismatch)[0])
        scan.non_finite_mismatch += count
    return scan


def _real_views(ref: torch.Tensor, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A complex output as (real, imaginary) pairs: cast to a real dtype, a complex tensor drops its
    imaginary part, and a kernel that wrote only real parts passed
    (`tests/adversarial/hacks/complex_output_real_part_only.py`). An output of another dtype reads as not
    finite, which fails (the dtype check names it first)."""
    import torch

    if not out.is_complex():
        return torch.view_as_real(ref), torch.full((*out.shape, 2), math.nan, device=out.device)
    return torch.view_as_real(ref), torch.view_as_real(out)


def _exact_scan(ref: torch.Tensor, out: torch.Tensor, atol: float) -> _ValueScan:
    """Integer and bool outputs (indices, counts, ids, masks) as integers: within the spec's `atol` taken
    whole (0 for a float spec's 1e-4; a quantizer's 1.0 allows a rounding step), no relative part. Compared
    as float32 within `rtol * |expected|`, an index past 10,000 could be one off at rtol 1e-4, and past 2**24
    float32 cannot tell neighbours apart (`tests/adversarial/hacks/integer_output_within_float_tolerance.py`)."""
    import torch

    ref_flat, out_flat = ref.detach().reshape(-1), out.detach().reshape(-1)
    allowed = 0 if ref.dtype == torch.bool else math.floor(atol)  # a mask has no rounding step
    scan = _ValueScan()
    for start in range(0, ref_flat.numel(), COMPARE_CHUNK_ELEMENTS):
        out_chunk = out_flat[start : start + COMPARE_CHUNK_ELEMENTS].to(torch.int64)
        ref_chunk = ref_flat[start : start + COMPARE_CHUNK_ELEMENTS].to(torch.int64)
        # int64 values 2**63 or more apart wrap: |-2**63| is -2**63 itself, and passed for any allowed
        # (`tests/adversarial/hacks/int64_output_wrong_by_sign_bit.py`); such a pair counts as farthest apart
        diff = (out_chunk - ref_chunk).abs()
        wrapped = (diff < 0) | ((out_chunk >= ref_chunk) != (out_chunk - ref_chunk >= 0))
        diff = torch.where(wrapped, torch.iinfo(torch.int64).max, diff)
        worst = int(torch.argmax(diff))
        scan.max_error = max(scan.max_error, float(diff[worst]))
        stepped = diff > 0
        if allowed and scan.worst_excess_at < 0 and bool(stepped.any()):
            scan.worst_excess_at = start + int(torch.nonzero(stepped)[0])  # first step, if the share fails
        scan.stepped += int(stepped.sum())
        beyond = int((diff > allowed).sum())
        if beyond:
            scan.all_close = False
            scan.out_of_tolerance += beyond
            if float(diff[worst]) - allowed > scan.worst_excess:
                scan.worst_excess, scan.worst_excess_at = float(diff[worst]) - allowed, start + worst
    if allowed and scan.all_close and scan.stepped * STEP_SHARE > ref_flat.numel():
        scan.all_close = False
    return scan


def _value_problem(path: str, ref: Any, out: Any, atol: float, rtol: float) -> tuple[str, str, float]:
    import torch

    if not isinstance(ref, torch.Tensor):
        equal = ref == out or (
            isinstance(ref, float)
            and isinstance(out, (int, float))
            and math.isclose(out, ref, rel_tol=rtol, abs_tol=atol)
        )
        return ("", "", 0.0) if equal else (f"{path}: got {out!r}, expected {ref!r}", "mismatch", 0.0)
    if ref.numel() == 0:
        return "", "", 0.0
    if ref.is_complex():  # compared, and named in the text, as (real, imaginary) pairs
        ref, out = _real_views(ref, out)
    scan = _scan_values(ref, out, atol, rtol)

    def value_at(tensor: torch.Tensor, flat: int) -> float:
        return float(tensor.detach().reshape(-1)[flat].item())

    if scan.unwritten:
        flat = scan.first_unwritten
        return (
            f"{path}: {scan.unwritten} of {ref.numel()} values are non-finite where the reference is finite, "
            f"first at index {_unravel(flat, tuple(ref.shape))}: got {value_at(out, flat):.6g} expected "
            f"{value_at(ref, flat):.6g} (output not fully written, out-of-bounds reads, or overflow)",
            "nonfinite",
            scan.max_error,
        )
    if scan.all_close:
        return "", "", scan.max_error
    flat = max(0, scan.first_non_finite_mismatch if scan.non_finite_mismatch else scan.worst_excess_at)
    bad = scan.out_of_tolerance + scan.non_finite_mismatch
    exact = not ref.is_floating_point()  # complex outputs are real views by here
    if exact and not scan.out_of_tolerance:  # every element within the step, too many of them stepped
        return (
            f"{path}: {scan.stepped} of {ref.numel()} integer elements differ from the reference by up to "
            f"{math.floor(atol)} (first at index {_unravel(max(0, scan.worst_excess_at), tuple(ref.shape))}); "
            f"the tolerance's step is for rounding ties, at most one element in {STEP_SHARE}",
            "mismatch",
            scan.max_error,
        )
    bound = (
        f"{math.floor(atol)} (integer output: atol whole, no rtol)"
        if exact
        else f"atol {atol:g} + rtol {rtol:g}*|ref|"
    )
    return (
        f"{path}: max abs error {scan.max_error:.3g} > {bound} at index "
        f"{_unravel(flat, tuple(ref.shape))}: got {value_at(out, flat):.6g} expected "
        f"{value_at(ref, flat):.6g}; {bad} of {ref.numel()} elements out of tolerance",
        "mismatch",
        scan.max_error,
    )


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return tuple(reversed(index))
