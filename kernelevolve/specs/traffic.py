"""A reference's input/output shapes, bytes moved and matmul/convolution FLOPs at one shape, counted on
PyTorch's meta device (shapes only, no memory, no real arithmetic): what the roofline floor, the LLM's
diagnosis and its prompts are computed from."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from kernelevolve.types import KernelSpec, ShapeCase

log = logging.getLogger(__name__)

_DTYPE_PEAK_KEY = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "float8": "fp8",
}


@dataclass(frozen=True)
class IOSummary:
    inputs: tuple[str, ...]  # e.g. "float32[16, 4096]"
    outputs: tuple[str, ...]
    bytes_moved: float | None  # inputs + parameters + outputs, each touched once
    flops: float | None  # matmul/conv-class FLOPs as counted by torch; None when zero or unknown


_io_cache: dict[tuple[str, str], IOSummary | None] = {}
_io_lock = threading.Lock()


def _describe(value: Any) -> str:
    dtype = str(value.dtype).removeprefix("torch.")
    return f"{dtype}[{', '.join(str(d) for d in value.shape)}]"


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


def _run_on_meta(spec: KernelSpec, shape: ShapeCase) -> IOSummary:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    namespace: dict[str, Any] = {"__name__": f"kernelevolve_meta_{spec.name}"}
    exec(compile(spec.reference_source, f"<reference {spec.name}>", "exec"), namespace)
    namespace.update(shape.params)
    dtype = getattr(torch, spec.dtype)
    with torch.device("meta"):
        inputs = [
            t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t
            for t in namespace["get_inputs"]()
        ]
        model = namespace["Model"](*namespace["get_init_inputs"]()).to(dtype)
        with FlopCounterMode(display=False) as counter:
            output = model(*inputs)
    ins, outs = _tensors(inputs), _tensors(output)
    state = list(model.parameters()) + list(model.buffers())
    moved = sum(t.numel() * t.element_size() for t in ins + outs + state)
    flops = float(counter.get_total_flops())
    return IOSummary(
        inputs=tuple(_describe(t) for t in ins),
        outputs=tuple(_describe(t) for t in outs),
        bytes_moved=float(moved),
        flops=flops if flops > 0 else None,
    )


def describe_io(spec: KernelSpec, shape: ShapeCase) -> IOSummary | None:
    """Input/output shapes, bytes and FLOPs of the reference at one shape; None if it cannot say."""
    key = (spec.key, shape.name)
    with _io_lock:
        if key in _io_cache:
            return _io_cache[key]
    summary: IOSummary | None
    try:
        summary = _run_on_meta(spec, shape)
    except Exception as exc:  # any reference the meta device cannot trace: simply unknown
        log.debug("no traffic estimate for %s/%s: %s", spec.name, shape.name, exc)
        summary = None
    with _io_lock:
        _io_cache[key] = summary
    return summary


def estimate_traffic(spec: KernelSpec, shape: ShapeCase) -> tuple[float | None, float | None]:
    summary = describe_io(spec, shape)
    return (summary.bytes_moved, summary.flops) if summary else (None, None)


def peak_key(dtype: str) -> str:
    """The platform peak_tflops key that matches a spec dtype."""
    return _DTYPE_PEAK_KEY.get(dtype, "fp32")
