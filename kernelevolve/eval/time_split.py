"""Where a winner's GPU time goes: our own kernels, library kernels (cuBLAS, cuDNN), everything else.

torch.profiler records the device work of a few calls of ModelNew; a kernel whose name holds one of
the candidate's kernel functions (@triton.jit, @cute.kernel / @cute.jit; Triton names a kernel after
its function, CuTe embeds the name) is ours, a GEMM/convolution kernel from a library is the
library's, and the rest (ATen element-wise kernels, copies, memsets) is other. GPU only: on the CPU
there is nothing to split and the functions return None. Candidate code runs here, so call this in an
evaluation child (the worker's "profile" op), never in the search process.
"""

from __future__ import annotations

import ast
import itertools
import re
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kernelevolve.eval import device_lock
from kernelevolve.eval.device_memory import drain_device
from kernelevolve.specs import precision, reference
from kernelevolve.types import EvalRequest

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform

WARMUP_CALLS = 3  # JIT compiles and autotuning happen before the profiled calls
PROFILED_CALLS = 10
PARTS = ("own", "library", "other")
# cuBLAS / cuBLASLt / cuDNN / CUTLASS kernel names (GEMMs, convolutions and their helpers).
_LIBRARY = re.compile(
    r"gemm|gemv|cublas|cudnn|cutlass|xmma|nvjet|conv|winograd|fft|splitk|implicit_|dgrad|wgrad|fprop",
    re.IGNORECASE,
)
_counter = itertools.count()


def kernel_names(source: str) -> tuple[str, ...]:
    """The candidate's kernel functions: @triton.jit (autotuned or not) and CuTe kernels."""
    from kernelevolve.eval.static.module import Module

    try:
        module = Module(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError):
        return ()
    return tuple(sorted(module.triton_kernels | module.cute_funcs))


def classify_kernel(name: str, own: Sequence[str]) -> str:
    """The part one device kernel belongs to: own, library or other."""
    for kernel in own:
        # The function name as a whole identifier piece ("_" counts as a separator: CuTe's names
        # are kernel_cutlass_<function>_<...>), so a kernel `k` does not claim every name with a k.
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(kernel)}(?![A-Za-z0-9])", name):
            return "own"
    return "library" if _LIBRARY.search(name) else "other"


def split_events(events: Iterable[tuple[str, float]], own: Sequence[str], calls: int) -> dict[str, float]:
    """(kernel name, device us) pairs of `calls` calls -> milliseconds per call in each part."""
    totals = dict.fromkeys(PARTS, 0.0)
    for name, micros in events:
        totals[classify_kernel(name, own)] += micros
    return {f"{part}_ms": totals[part] / 1000.0 / max(calls, 1) for part in PARTS}


def kernel_time_split(
    model_new: Any, inputs: Sequence[Any], kernel_names: Sequence[str], calls: int = PROFILED_CALLS
) -> dict[str, float] | None:
    """{"own_ms", "library_ms", "other_ms"}: device time per call of `model_new(*inputs)`, or None
    when nothing runs on a GPU."""
    import torch

    if not torch.cuda.is_available() or not any(_on_cuda(x) for x in inputs):
        return None
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        for _ in range(WARMUP_CALLS):
            model_new(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                model_new(*inputs)
            torch.cuda.synchronize()
    return split_events(_device_kernels(prof.events()), kernel_names, calls)


def _on_cuda(value: Any) -> bool:
    return bool(getattr(value, "is_cuda", False))


def _device_kernels(events: Iterable[Any]) -> Iterable[tuple[str, float]]:
    from torch.autograd import DeviceType

    for event in events:
        # GPU-side user annotations span kernels already counted: only the kernels themselves count.
        if event.device_type != DeviceType.CUDA or getattr(event, "is_user_annotation", False):
            continue
        yield event.name, float(event.time_range.elapsed_us())


def profile_request(request: EvalRequest, platform: Platform, device: str) -> dict[str, Any] | None:
    """The split at every shape of the spec and summed over them, with shares; None on the CPU."""
    if not device.startswith("cuda"):
        return None
    from kernelevolve.backends import get_backend

    candidate, spec, settings = request.candidate, request.spec, request.settings
    names = kernel_names(candidate.source)
    module_name = f"kernelevolve_profile_{candidate.id}_{next(_counter)}"
    try:
        model_new = get_backend(candidate.backend).load(candidate.source, module_name).ModelNew
        ref_module = reference.load_reference(spec.reference_source)
        dtype = reference.torch_dtype(spec.dtype)
        shapes: dict[str, dict[str, float]] = {}
        # the device held: no other evaluation's kernels
        with device_lock.hold_device(device), precision.reference_precision(spec.reference_precision):
            for shape in spec.shapes:
                reference.apply_shape(ref_module, shape)
                model = reference.build_model(model_new, ref_module, settings.seed, device, dtype, spec.mode)
                inputs = reference.make_inputs(ref_module, settings.seed, device, dtype, on_device=True)
                split = kernel_time_split(model, inputs, names)
                if split is None:
                    return None
                shapes[shape.name] = split
                del model, inputs
    finally:
        sys.modules.pop(module_name, None)
        drain_device(device, quiet=True)
    return summarise(shapes, names)


def summarise(shapes: dict[str, dict[str, float]], names: Sequence[str]) -> dict[str, Any]:
    """Per-shape splits -> totals over the shapes, each part's share of the total, and the detail."""
    totals = {f"{part}_ms": sum(s[f"{part}_ms"] for s in shapes.values()) for part in PARTS}
    whole = sum(totals.values())
    shares = {f"{part}_share": (totals[f"{part}_ms"] / whole if whole > 0 else None) for part in PARTS}
    return {**totals, **shares, "kernel_names": list(names), "shapes": shapes}
