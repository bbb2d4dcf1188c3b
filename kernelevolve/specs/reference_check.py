"""Check that a spec's reference runs and produces tensors at every benchmark shape.

Runs on meta tensors first (no memory, no time, works for GPU-sized shapes on a laptop); falls
back to a real CPU run for small shapes when an op has no meta implementation.
"""

from __future__ import annotations

import logging
from typing import Any

from kernelevolve.specs.reference_module import load_reference_module
from kernelevolve.specs.tracing import TRACING_LOCK
from kernelevolve.types import KernelSpec, ShapeCase

log = logging.getLogger(__name__)
_CPU_FALLBACK_MAX_ELEMENTS = 1 << 24


def run_reference(spec: KernelSpec, shape: ShapeCase, device: str) -> Any:
    """Build Model and inputs for one shape on `device` ("meta" or "cpu") and return the output."""
    import torch

    module = load_reference_module(spec.reference_source, shape.params)
    with TRACING_LOCK, torch.device(device):  # not while another thread's FX trace patches Module.__call__
        torch.manual_seed(0)
        model = module.Model(*module.get_init_inputs())
        inputs = module.get_inputs()
        with torch.no_grad():
            return model(*inputs), inputs


def _count_elements(value: Any) -> int:
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, (list, tuple)):
        return sum(_count_elements(v) for v in value)
    return 0


def _has_tensor(value: Any) -> bool:
    import torch

    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_tensor(v) for v in value)
    return False


def check_reference(spec: KernelSpec) -> str | None:
    """None when the reference is usable at every shape, else a message saying what failed where."""
    for shape in spec.shapes:
        try:
            output, _ = run_reference(spec, shape, "meta")
        except ValueError as exc:  # unknown constants, missing names
            return f"shape {shape.name!r}: {exc}"
        except (NotImplementedError, RuntimeError) as exc:
            problem = _cpu_fallback(spec, shape, exc)
            if problem:
                return problem
            continue
        except Exception as exc:  # the reference itself is broken
            return f"reference fails to run at shape {shape.name!r}: {type(exc).__name__}: {exc}"
        if not _has_tensor(output):
            return f"reference at shape {shape.name!r} returned {type(output).__name__}, not a tensor"
    return None


def _cpu_fallback(spec: KernelSpec, shape: ShapeCase, meta_error: BaseException) -> str | None:
    """Meta tensors are not supported by every op; try a real run when it is small enough."""
    try:
        import torch

        module = load_reference_module(spec.reference_source, shape.params)
        with torch.device("meta"):
            size = _count_elements(module.get_inputs())
    except Exception:
        size = 0
    if size > _CPU_FALLBACK_MAX_ELEMENTS:
        log.warning(
            "reference not checkable on meta tensors at %s (%s); too large to run on CPU",
            shape.name,
            meta_error,
        )
        return None
    try:
        output, _ = run_reference(spec, shape, "cpu")
    except Exception as exc:
        return f"reference fails to run at shape {shape.name!r}: {type(exc).__name__}: {exc}"
    if not _has_tensor(output):
        return f"reference at shape {shape.name!r} returned {type(output).__name__}, not a tensor"
    return None
