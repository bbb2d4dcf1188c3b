"""A one-line bottleneck statement for a report, and the KB query it implies.

For a failed candidate the statement is the failure (status, error, the telling line of the
feedback). For a working one it places the measured time against the platform's datasheet
peaks: launch-bound, memory-bound at some fraction of bandwidth, or compute-bound (with or
without tensor cores). Bytes and FLOPs come from `specs.traffic.estimate_traffic`, which runs the
reference on PyTorch's meta device (shapes only, no memory, no real arithmetic).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernelevolve.specs.traced_tags import program_tags
from kernelevolve.specs.traffic import peak_key
from kernelevolve.types import Baseline, EvalReport, KernelSpec, Status

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform

log = logging.getLogger(__name__)

_LAUNCH_BOUND_MS = 0.02  # below ~20 us a GPU kernel's time is mostly launch and tail overhead

_QUERY_HINTS = {
    "launch_bound": "launch overhead small problem fuse kernels persistent kernel fewer launches",
    "memory_bound": "memory-bound bandwidth coalesced vectorized loads fusion single pass",
    "compute_bound": "compute-bound tiling block sizes pipelining num_stages tensor cores",
    "no_tensor_cores": "tensor cores tl.dot mma bf16 fp16 tiling",
    "timing_only": "speedup block size tuning fusion",
    "incorrect": "correctness numerical precision accumulation masking boundary",
    "compile_error": "compile error",
    "runtime_error": "runtime error illegal memory access masking bounds",
    "rejected_static": "constraints allowed operations",
    "timeout": "timeout hang infinite loop grid size",
    "worker_crash": "crash illegal memory access out of bounds",
}


@dataclass(frozen=True)
class Diagnosis:
    kind: str  # a Status value for failures; launch_bound, memory_bound, compute_bound, ... for ok
    statement: str
    query: str  # drives knowledge-base retrieval


def telling_line(feedback: str, limit: int = 200) -> str:
    """The line of feedback that says most: a traceback's last line, else the first line."""
    lines = [line.strip() for line in feedback.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if any(line.startswith("Traceback") for line in lines) else lines[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _failure(report: EvalReport, spec: KernelSpec) -> Diagnosis:
    status = report.status
    detail = telling_line(report.feedback)
    if report.error_name and detail and report.error_name not in detail:
        named = f"{report.error_name}: {detail}"
    else:
        named = detail or report.error_name
    if status is Status.INCORRECT:
        err = "unknown" if report.max_abs_error is None else f"{report.max_abs_error:.3g}"
        statement = f"incorrect: max abs error {err} (atol {spec.atol:g}, rtol {spec.rtol:g})"
        if report.flags:
            statement += f"; flags: {', '.join(report.flags)}"
        if detail:
            statement += f"; {detail}"
    else:
        label = {
            Status.REJECTED_STATIC: "rejected by the static check",
            Status.COMPILE_ERROR: "compile error",
            Status.RUNTIME_ERROR: "runtime error",
            Status.TIMEOUT: "timeout",
            Status.WORKER_CRASH: "worker crash",
        }.get(status, status.value)
        statement = f"{label}: {named}" if named else label
    query = " ".join([_QUERY_HINTS.get(status.value, ""), report.error_name, detail, *program_tags(spec)])
    return Diagnosis(status.value, statement, " ".join(query.split()))


def _per_shape(value: float | Mapping[str, float] | None, spec: KernelSpec, shape: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value.get(shape)
    return float(value) if spec.shapes and spec.shapes[0].name == shape else None


def diagnose(
    report: EvalReport,
    baselines: Mapping[str, Baseline],
    spec: KernelSpec,
    platform: Platform,
    bytes_moved: float | Mapping[str, float] | None,
    flops: float | Mapping[str, float] | None,
) -> Diagnosis:
    """Bottleneck of `report`. A plain number for bytes/flops describes the spec's first shape;
    a mapping gives them per shape name. The largest shape (by eager time) is the one judged."""
    if report.status is not Status.OK:
        return _failure(report, spec)
    if not report.latency:
        return Diagnosis("timing_only", "correct, but no timings were recorded", _QUERY_HINTS["timing_only"])

    def eager_ms(name: str) -> float:
        base = baselines.get(name) or report.baselines.get(name)
        return base.eager.median_ms if base else report.latency[name].median_ms

    shape = max(report.latency, key=eager_ms)
    t_ms = report.latency[shape].median_ms
    base = baselines.get(shape) or report.baselines.get(shape)
    tail = f"; {base.eager.median_ms / t_ms:.2f}x eager" if base and t_ms > 0 else ""
    where = f" at shape {shape}" if len(report.latency) > 1 else ""
    moved, work = _per_shape(bytes_moved, spec, shape), _per_shape(flops, spec, shape)
    key = peak_key(spec.dtype)
    peak_tflops = platform.peak_tflops.get(key, 0.0)
    floor = platform.roofline_floor_ms(moved or 0.0, work or 0.0, key) if moved or work else None

    if t_ms <= 0:
        kind, statement = "timing_only", f"non-positive time ({t_ms} ms){where}"
    elif platform.device != "cpu" and t_ms < _LAUNCH_BOUND_MS and (floor is None or floor < 0.25 * t_ms):
        kind, statement = "launch_bound", f"launch-bound ({t_ms:.3g} ms per call{where})"
    elif (
        work and moved and peak_tflops > 0 and work / moved >= peak_tflops * 1e3 / platform.peak_bandwidth_gbs
    ):
        achieved = work / (t_ms * 1e-3) / 1e12
        fp32_peak = platform.peak_tflops.get("fp32", 0.0)
        if key in ("bf16", "fp16", "fp8") and fp32_peak and achieved <= fp32_peak:
            kind = "no_tensor_cores"
            statement = (
                f"compute-bound without tensor cores{where} ({achieved:.3g} TFLOP/s; "
                f"{key} tensor-core peak {peak_tflops:g}, fp32 CUDA-core peak {fp32_peak:g})"
            )
        else:
            kind = "compute_bound"
            statement = (
                f"compute-bound at {100 * achieved / peak_tflops:.0f}% of peak {key}{where} "
                f"({achieved:.3g} of {peak_tflops:g} TFLOP/s)"
            )
    elif moved:
        achieved_tbs = moved / (t_ms * 1e-3) / 1e12
        peak_tbs = platform.peak_bandwidth_gbs / 1e3
        kind = "memory_bound"
        statement = (
            f"memory-bound at {100 * achieved_tbs / peak_tbs:.0f}% of peak bandwidth{where} "
            f"({achieved_tbs:.2g} of {peak_tbs:.3g} TB/s)"
        )
    else:
        kind, statement = "timing_only", f"{t_ms:.3g} ms per call{where}; bytes and FLOPs unknown"
    query = " ".join([_QUERY_HINTS[kind], spec.dtype, *program_tags(spec)])
    return Diagnosis(kind, statement + tail, query)
