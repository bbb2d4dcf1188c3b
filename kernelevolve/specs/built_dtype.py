"""The floating dtype a reference builds its problem in, so a spec that names none keeps it.

A KernelBench-form problem says its precision by how it builds its inputs (`torch.randn(..., dtype=
torch.float16)`), not in a field. Its spec's dtype is read from there: the first floating input's dtype,
else the model's first floating parameter's, else float32. The harness casts floating inputs and
parameters to the spec's dtype, so a half-precision problem read as float32 would be checked as an fp32
problem (the cast widens every input) and its kernels tuned for the wrong precision.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kernelevolve.specs.reference_module import load_reference_module
from kernelevolve.specs.tracing import TRACING_LOCK

log = logging.getLogger(__name__)

DTYPES = ("float32", "float16", "bfloat16")
DEFAULT_DTYPE = "float32"
# Per-dtype default tolerance, KernelBench's own: 1e-4 for fp32, 1e-2 for fp16 and bf16.
DEFAULT_TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}


def _name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _tensors_in(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_in(v)]
    return []


def floating_dtype(inputs: list[Any], model: Any) -> str | None:
    """The first floating input's dtype name, else the model's first floating parameter's; None if none."""
    import torch

    floats = [t.dtype for t in _tensors_in(inputs) if t.is_floating_point()]
    if not floats and isinstance(model, torch.nn.Module):
        floats = [p.dtype for p in model.parameters() if p.is_floating_point()]
    if not floats:
        return None
    if len({_name(d) for d in floats}) > 1:
        log.warning("the reference's inputs mix floating dtypes; the spec casts all of them to %s", floats[0])
    return _name(floats[0])


def built_dtype(source: str, params: Mapping[str, Any] | None = None) -> str:
    """The dtype the reference builds its problem in (at these size constants), read on meta tensors (no
    memory, GPU sizes included); float32 where it cannot be built there, where it builds no floating tensor,
    or where it builds one the harness does not take (float64: logged)."""
    import torch

    try:
        module = load_reference_module(source, params)
        with TRACING_LOCK, torch.device("meta"):
            model = module.Model(*module.get_init_inputs())
            found = floating_dtype(list(module.get_inputs()), model)
    except Exception:  # noqa: BLE001 - the reference check reports a reference that cannot be built
        return DEFAULT_DTYPE
    if found is None:
        return DEFAULT_DTYPE
    if found not in DTYPES:
        log.warning("the reference builds %s tensors; not supported, checked as %s", found, DEFAULT_DTYPE)
        return DEFAULT_DTYPE
    return found
