"""Compile a Triton candidate's kernels at every shape without launching any of them.

Run before the evaluation takes the device lock, so compilation (seconds of CPU per candidate)
overlaps another child's correctness and timing runs on the same GPU. ModelNew is called on
placeholder inputs (uninitialised floats, zeroed integers: no kernels to make them) with Triton's
launches turned into compile-only warm-ups; its compiled kernels stay in Triton's caches for the
real runs. Anything that goes wrong here is ignored: the real run compiles what was missed and
reports the candidate's faults itself.

The kernels compile in a thread pool (Triton's AsyncCompileMode): the suppressed launches submit their
compiles and return, and the pass waits for all of them at its end. Most of Triton's compile runs outside
the GIL (1.7-1.8x with 2 threads on 2 cores, experiments/parallel_compile_cpu), and a level-3 Inductor
program launches 20-60 kernels, which took about 7.5 s one after another on the H200.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

from kernelevolve.eval import reference
from kernelevolve.types import ShapeCase

log = logging.getLogger(__name__)

# Threads compiling one evaluation's kernels. Two evaluation children per GPU share the host's cores.
COMPILE_THREADS = max(1, min(8, (os.cpu_count() or 2) // 2))


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
            with launches_suppressed(), compiles_in_parallel(), torch.no_grad():
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
def compiles_in_parallel(threads: int = COMPILE_THREADS) -> Iterator[None]:
    """Within the block, Triton compiles submitted kernels in `threads` threads; leaving it waits for
    them all. A compile error is left for the real run to report."""
    import triton

    if threads <= 1:
        yield
        return
    with (
        ThreadPoolExecutor(threads, thread_name_prefix="precompile") as pool,
        triton.AsyncCompileMode(pool, ignore_errors=True),
    ):
        yield


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
