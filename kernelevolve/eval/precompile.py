"""Compile a Triton candidate's kernels at every shape without launching any of them.

Run before the evaluation takes the device lock, so compilation (seconds of CPU per candidate)
overlaps another child's correctness and timing runs on the same GPU. ModelNew is called on
placeholder inputs (uninitialised floats, zeroed integers: no kernels to make them) with Triton's
launches turned into compile-only warm-ups; its compiled kernels stay in Triton's caches for the
real runs. Anything that goes wrong here is ignored: the real run compiles what was missed and
reports the candidate's faults itself.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

from kernelevolve.eval import reference
from kernelevolve.types import ShapeCase

log = logging.getLogger(__name__)


class _Unsupported(Exception):
    """A kernel kind whose warm-up would still run work (Triton's autotuner benchmarks configs)."""


def precompile(
    model_new: type,
    ref_module: ModuleType,
    shapes: Sequence[ShapeCase],
    seed: int,
    device: str,
    dtype: Any,
) -> str:
    """Compile at every shape; returns "" on success, else why it stopped (never raises)."""
    import torch

    try:
        for shape in shapes:
            reference.apply_shape(ref_module, shape)
            inputs = placeholder_inputs(ref_module, device, dtype)
            model = reference.build_model(model_new, ref_module, seed, device, dtype)
            with launches_suppressed(), torch.no_grad():
                model(*inputs)
            del model, inputs
    except Exception as exc:  # the real run reports candidate faults; here they only end the pass
        log.debug("precompile stopped: %s: %s", type(exc).__name__, exc)
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        # placeholders held in this child's allocator cache would crowd the child measuring now
        torch.cuda.empty_cache()
    return ""


def placeholder_inputs(module: ModuleType, device: str, dtype: Any) -> list[Any]:
    """Inputs of the right shapes, dtypes and layout, made without running a kernel."""
    import torch

    with torch.device("meta"):
        shaped = module.get_inputs()

    def place(tensor: Any) -> Any:
        if tensor.is_floating_point():
            return torch.empty(tensor.shape, dtype=dtype, device=device)
        return torch.zeros(tensor.shape, dtype=tensor.dtype, device=device)  # valid indices, lengths

    return [reference.map_tensors(place, v) for v in shaped]


@contextlib.contextmanager
def launches_suppressed() -> Iterator[None]:
    """Within the block, Triton kernel launches compile (warm-up) and return without running."""
    from triton.runtime import autotuner, jit

    run = jit.JITFunction.run
    autotuned = autotuner.Autotuner.run

    def compile_only(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        return run(self, *args, grid=grid, warmup=True, **kwargs)

    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise _Unsupported("an autotuned kernel: its configs are compiled and timed in the real run")

    jit.JITFunction.run = compile_only  # type: ignore[method-assign]
    autotuner.Autotuner.run = refuse  # type: ignore[method-assign]
    try:
        yield
    finally:
        jit.JITFunction.run = run  # type: ignore[method-assign]
        autotuner.Autotuner.run = autotuned  # type: ignore[method-assign]
