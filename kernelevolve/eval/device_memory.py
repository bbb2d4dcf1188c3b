"""The evaluation child's device between evaluations: warmed as it starts, drained after each candidate,
its memory freed (young cycles every time, a full collection now and then, the CUDA cache when it holds
much), and held under the device lock for the checks and timing.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from kernelevolve.eval import (
    correctness,
    device_lock,
    reference_outputs,
)
from kernelevolve.eval.shared_tensors import SharedArena
from kernelevolve.eval.stages import _phase

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform

log = logging.getLogger(__name__)


def warm_device(device: str) -> None:
    """An evaluation child's first uses of the device, made as it starts rather than in its first
    evaluation: the context (outside the lock), then PyTorch's kernels for inputs and comparisons, cuBLAS
    and cuDNN handles and CUDA IPC export (under it: no kernel runs beside another evaluation's). A first
    evaluation in a sweep held the lock about 5 s against about 1 s for the next ones
    (experiments/adversarial_gpu, session 27). A failure here is left for the first evaluation to report."""
    if not device.startswith("cuda"):
        return
    try:
        import torch

        # the first op on a meta tensor imports PyTorch's symbolic shapes (sympy; 0.3-0.5 s on a CPU): the
        # timing ring's slots are laid out on meta, and a sweep's first evaluation of each problem spent
        # 2.4-2.7 s of locked timing set-up against 0.01-0.08 s later (experiments/adversarial_gpu, session 40)
        torch.empty_like(torch.empty(1, device="meta"))
        torch.empty(1, device=device)
        with device_lock.hold_device(device):
            torch.manual_seed(0)
            value = torch.randn(64, 64, device=device)
            other = torch.rand_like(value)
            correctness.within_tolerance(value, other, 1e-4, 1e-4)
            (value @ other).sum().item()
            torch.nn.functional.conv2d(value.view(1, 1, 64, 64), other[:3, :3].reshape(1, 1, 3, 3))
            arena = SharedArena(device)
            try:
                arena.ref(arena.copy_of(value))
            finally:
                arena.close()
            torch.cuda.synchronize(device)
    except Exception:  # noqa: BLE001 - the first evaluation reports whatever is wrong with the device
        log.info("warming %s failed", device, exc_info=True)


def drain_device(device: str, quiet: bool = False) -> None:
    """Wait for every stream on the device: work a candidate left in flight (a side stream, a delayed
    kernel) must not write into memory the next evaluation is given by the caching allocator."""
    if not device.startswith("cuda"):
        return
    import torch

    try:
        torch.cuda.synchronize(device)
    except Exception:
        if not quiet:
            raise


FULL_GC_EVERY = 16  # a full collection costs ~0.1 s with torch loaded: more than a whole CPU evaluation


_GPU_MEMORY_WORTH_RELEASING = 1 << 30


def _release_memory(
    device: str, phases: dict[str, float] | None = None, full_collection: bool = True
) -> None:
    """Free what the last evaluation (or baseline measurement) left: young cycles every time,
    everything now and then (`_collect_fully_when_due`, unless the caller does that later), and the CUDA
    cache when it holds much.

    A candidate's module, kernels and failed frames sit in reference cycles; a young-generation
    pass frees most of them.
    """
    phases = {} if phases is None else phases
    with _phase(phases, "free_gc"):
        gc.collect(1)
    if full_collection:
        _collect_fully_when_due(device, phases)
    if device.startswith("cuda"):
        # Cached blocks (the poisoned-output pool is 4x an output) would starve the other children and
        # problems sharing this GPU: a multi-GB reference then fails with out-of-memory for no fault of its own.
        with _phase(phases, "free_cache"):
            release_device_cache()


def _collect_fully_when_due(device: str, phases: dict[str, float]) -> None:
    """A full pass every FULL_GC_EVERY evaluations, or at once when device memory beyond the kept reference
    outputs is still held (large tensors kept alive by a cycle must not pile up); what it frees on the
    device goes back to the driver."""
    due = next(_collections) % FULL_GC_EVERY == 0
    if not due and _device_memory_beyond_kept(device) <= _GPU_MEMORY_WORTH_RELEASING:
        return
    with _phase(phases, "full_gc"):
        gc.collect()
        if device.startswith("cuda"):
            release_device_cache()


_collections = itertools.count(1)


def release_device_cache() -> None:
    """Free the blocks runners let go of and, where much is cached, the allocator's cache (after an
    evaluation, and before a multi-GB timing: `RemoteCandidate.end_checks`)."""
    import torch

    torch.cuda.ipc_collect()  # blocks its runner let go of (`Runner.release_shared`) are freed only here
    if torch.cuda.memory_reserved() > _GPU_MEMORY_WORTH_RELEASING:  # small pools are kept: reallocating costs
        torch.cuda.empty_cache()


STRANDED_LIMIT_BYTES = 1 << 30


def device_memory_stranded(device: str) -> bool:
    """Whether this judge still holds much device memory beyond the reference outputs it keeps: blocks a
    runner mapped and never let go (it was killed busy, or would not release them), which CUDA IPC keeps
    allocated here for good. The worker replaces such a judge, which frees them."""
    if not device.startswith("cuda"):
        return False
    import torch

    torch.cuda.ipc_collect()
    return _device_memory_beyond_kept(device) > STRANDED_LIMIT_BYTES


def _device_memory_beyond_kept(device: str) -> int:
    """Device memory this process has allocated besides the reference outputs it keeps on purpose."""
    if not device.startswith("cuda"):
        return 0
    import torch

    return int(torch.cuda.memory_allocated()) - reference_outputs.KEPT.nbytes()


@contextlib.contextmanager
def _device_held(
    device: str, phases: dict[str, float], end_holder: Callable[[int], None] | None = None
) -> Iterator[float]:
    """Hold the device; yields the seconds spent waiting for it (`end_holder`: `device_lock.hold`'s)."""
    with device_lock.hold_device(device, end_holder) as waited:
        if device.startswith("cuda"):
            phases["device_wait"] = phases.get("device_wait", 0.0) + waited
        yield waited


def default_device(platform: Platform) -> str:
    return "cpu" if platform.device == "cpu" else f"{platform.device}:0"
