"""torch.compile's baseline compiled before the device lock, and run for the first time under it.

torch.compile compiles on a model's first call and runs it in the same call, and Inductor's runtime
autotuning benchmarks kernel configurations on that first run, so the first call used to be made under
the device lock: 20-60 s of a level-3 network's compile during which no other evaluation could use the
GPU (experiments/sample_sweep_h200/run_06). Here the first
call is made on placeholder inputs with the compiled graphs' execution answered from meta kernels
(`precompile.device_work_faked`), so Dynamo traces and Inductor generates and compiles every kernel
without running anything; the caller then makes the real first call, autotuning included, under the lock.

The backend is Inductor's own entry point, `compile_fx`, as `torch.compile`'s default "inductor" backend
calls it, behind one Python call that chooses between the two phases. The benchmarks Inductor runs while
compiling (whether padding a GEMM pays, `pad_mm`) take the device lock for their own duration, as they did
when the whole compile held it. Python run between graphs (a graph break) still runs for real on the
placeholders in the first phase.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast


class _TwoPhaseBackend:
    """A Dynamo backend: Inductor's compile of each graph; the compiled graph runs only once `live`."""

    def __init__(self, device_types: tuple[str, ...], cuda_graphs: bool) -> None:
        self.live = False
        self.device_types = device_types
        # what torch.compile(mode="reduce-overhead") sets; the graphs are recorded on the first live calls
        self.config_patches = {"triton.cudagraphs": True} if cuda_graphs else None

    def __call__(self, graph_module: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        from torch._inductor.compile_fx import compile_fx

        # outside AOT mode compile_fx returns the callable (its other return types are AOT's)
        compiled = cast(
            Callable[..., Any],
            compile_fx(graph_module, list(example_inputs), config_patches=self.config_patches),
        )

        def run(*args: Any) -> Any:
            if self.live:
                return compiled(*args)
            from kernelevolve.eval.precompile import device_work_faked

            with device_work_faked(self.device_types):
                return graph_module(*args)

        return run


def compile_before_running(
    model: Any,
    placeholder_inputs: Sequence[Any],
    device: str,
    device_types: tuple[str, ...] | None = None,
    cuda_graphs: bool = False,
) -> Any:
    """`torch.compile(model)` with its compiling done here, on `placeholder_inputs` (the real inputs'
    shapes, dtypes and strides; their values are never read), and nothing run on the device (tensors of
    `device_types`, default: `device`'s type). The returned model's next call with real inputs of those
    shapes runs the compiled code for the first time, without compiling again. `cuda_graphs`: Inductor's
    CUDA graphs on, as `mode="reduce-overhead"` turns them on (recorded in the first real calls)."""
    import torch

    backend = _TwoPhaseBackend(device_types or (torch.device(device).type,), cuda_graphs)
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad(), _compile_time_benchmarks_locked(device):
        compiled(*placeholder_inputs)
    backend.live = True
    return compiled


@contextlib.contextmanager
def _compile_time_benchmarks_locked(device: str) -> Iterator[None]:
    """Inductor's GPU benchmarks during the block hold the device lock while they run."""
    if not device.startswith("cuda"):
        yield
        return
    from torch._inductor.runtime import benchmarking

    from kernelevolve.eval.device_lock import hold_device

    shared = benchmarking.benchmarker
    own = vars(shared).get("benchmark_gpu")  # usually the class's method; an instance's own is put back
    unlocked = shared.benchmark_gpu

    def locked(*args: Any, **kwargs: Any) -> Any:
        with hold_device(device):
            return unlocked(*args, **kwargs)

    shared.benchmark_gpu = locked  # type: ignore[method-assign]
    try:
        yield
    finally:
        if own is None:
            del shared.benchmark_gpu
        else:
            shared.benchmark_gpu = own  # type: ignore[method-assign]
