"""Evaluate one candidate in the current process: the contract everything else trusts.

Stages, each able to stop with a status: static check -> load -> build ModelNew -> correctness at
every shape -> timing at every shape. Candidate faults become reports; only a broken spec (the
reference itself fails) raises `ReferenceSpecError`. Run this only inside an evaluation child
(`kernelevolve.eval.worker`): candidate code can hang, crash or poison the CUDA context.

Here: the order of the stages, the checks before anything runs, and the runner. The correctness and
timing stages are `stages.py`, the device between evaluations `device_memory.py`, and the eager and
torch.compile baselines `baseline_timing.py`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
import traceback
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernelevolve.eval import (
    correctness,
    judged_run,
    runner_client,
    timers,
    value_scan,
)
from kernelevolve.eval.device_memory import (
    _collect_fully_when_due,
    _device_held,
    _release_memory,
    default_device,
    drain_device,
)
from kernelevolve.eval.feedback import traceback_text
from kernelevolve.eval.precompile import FAKED_LIBRARY_WORK, OWN_KERNELS_ONLY
from kernelevolve.eval.remote import RunnerFailure, failure_fields
from kernelevolve.eval.runner_channel import ReplyError
from kernelevolve.eval.runner_client import RunnerGone, RunnerTimeout
from kernelevolve.eval.shared_tensors import SharedArena
from kernelevolve.eval.stages import _correctness_stage, _fail, _phase, _Stop, _timing_stage
from kernelevolve.eval.timers import CUT_SHORT_FLAG
from kernelevolve.specs import precision, reference
from kernelevolve.specs.reference import ReferenceSpecError
from kernelevolve.types import (
    Candidate,
    EvalReport,
    EvalRequest,
    EvalSettings,
    KernelSpec,
    ShapeCase,
    Status,
)

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform

log = logging.getLogger(__name__)


def worker_label(device: str) -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{device}"


def evaluate(
    request: EvalRequest, platform: Platform, device: str | None = None, worker: str | None = None
) -> EvalReport:
    """Run every stage for `request` here and return its report (never raises for candidate faults)."""
    device = device or default_device(platform)
    label = worker or worker_label(device)
    start = time.perf_counter()
    fields: dict[str, Any]
    phases: dict[str, float] = {}
    # The device lock, taken for the checks and timing (`_judged_stages`) and let go only after the runner
    # is dead and this judge's memory is freed: one that let go first would still hold gigabytes (inputs,
    # ring, the runner's outputs) while the next allocates its own, and problems with multi-GB inputs ran
    # out of device memory (experiments/adversarial_gpu, session 26).
    hold = contextlib.ExitStack()
    try:
        with precision.reference_precision(request.spec.reference_precision):
            fields = _run_stages(request, platform, device, phases, hold)
        drain_device(device)  # a late fault of this candidate's kernels is this candidate's
    except _Stop as stop:
        fields = stop.fields
    except ReferenceSpecError as exc:
        traceback.clear_frames(exc.__traceback__)  # its frames hold tensors, to be freed below
        raise
    except Exception as exc:
        fields = _unexpected_error_fields(exc, request.candidate.id)
    finally:
        try:
            drain_device(device, quiet=True)
            _release_memory(device, phases, full_collection=False)
        finally:
            hold.close()
    # A full collection (0.1-0.3 s in a judge) after the lock: what only it frees is rare and small beside
    # what the young one and the cache release under the lock free
    _collect_fully_when_due(device, phases)
    return _report(request, label, start, fields, phases)


def _report(
    request: EvalRequest, label: str, start: float, fields: dict[str, Any], phases: dict[str, float]
) -> EvalReport:
    return EvalReport(
        candidate_id=request.candidate.id,
        worker=label,
        wall_s=time.perf_counter() - start,
        phase_s={k: round(v, 4) for k, v in phases.items()},
        **fields,
    )

    # the worker's recycle check (a sticky error) replaces this process


def _unexpected_error_fields(exc: Exception, candidate_id: str) -> dict[str, Any]:
    """An exception from the harness's own code: a kernel's late device fault, or a harness bug."""
    if value_scan.is_device_fault(exc):
        return _fail(
            Status.RUNTIME_ERROR,
            type(exc).__name__,
            "a device error surfaced after the kernel ran (asynchronous kernel fault):\n"
            + traceback_text(exc, ""),
        )
    log.exception("harness error while evaluating %s", candidate_id)
    fields = _fail(
        Status.RUNTIME_ERROR,
        type(exc).__name__,
        "internal harness error: " + traceback_text(exc, ""),
    )
    fields["flags"] = ("harness_error",)  # so a harness bug never passes for a kernel fault unnoticed
    return fields


def _run_stages(
    request: EvalRequest,
    platform: Platform,
    device: str,
    phases: dict[str, float],
    hold: contextlib.ExitStack,
) -> dict[str, Any]:
    from kernelevolve.backends import get_backend

    candidate, spec, settings = request.candidate, request.spec, request.settings
    try:
        get_backend(candidate.backend)
    except KeyError as exc:
        raise _Stop(_fail(Status.REJECTED_STATIC, "unknown_backend", str(exc))) from None
    _check_backend_allowed(candidate.backend, spec, platform)
    with _phase(phases, "static"):
        _static_stage(candidate.source, candidate.backend, settings.strict, spec.reference_source)
    deadline = time.monotonic() + settings.timeout_s - min(5.0, 0.1 * settings.timeout_s)
    runners = runner_client.pool()
    # Temporary files go to the runner's own folder: the machine's temp folder may hold this search's
    # runs and caches, which a runner must not write. On the CPU nothing compiles: no process may start
    # (on GPUs Triton runs the compilers as processes; there the judge looks for processes at its checks)
    sandbox = runner_client.Sandbox(
        _runner_writable_dirs(device),
        _host_memory_bytes(settings, device),
        True,
        single_process=not device.startswith("cuda"),
    )
    with _phase(phases, "runner"):
        runner = runners.take(device, sandbox)
    arena = SharedArena(device, runner.shared_dir)
    fields: dict[str, Any] | None = None
    try:
        fields = _judged_stages(request, platform, device, runner, arena, phases, deadline, hold)
    except judged_run.Verdict as verdict:
        fields = verdict.fields
    except correctness.CandidateFailure as failure:
        fields = _candidate_failure_fields(failure.original, settings.timeout_s)
    except (RunnerFailure, RunnerGone, RunnerTimeout, ReplyError) as exc:
        fields = _candidate_failure_fields(exc, settings.timeout_s)
    finally:  # the runner dies before `evaluate` frees this evaluation's memory and lets go of the device
        escaped = runners.finish(runner, phases)
        arena.close()
        if escaped and (fields or {}).get("error_name") != "escaped_process":  # (found at a check: said so)
            fields = _fail(
                Status.RUNTIME_ERROR,
                "escaped_process",
                f"{len(escaped)} process(es) started by the candidate outlived its evaluation and were killed",
            )
            fields["flags"] = ("process_escaped",)
    assert fields is not None
    return fields


def _candidate_failure_fields(exc: BaseException, timeout_s: float) -> dict[str, Any]:
    verdict = judged_run.runner_trouble(exc, timeout_s)
    if verdict is None:
        raise exc
    return verdict.fields


def _judged_stages(
    request: EvalRequest,
    platform: Platform,
    device: str,
    runner: runner_client.Runner,
    arena: SharedArena,
    phases: dict[str, float],
    deadline: float,
    hold: contextlib.ExitStack,
) -> dict[str, Any]:
    """Load the candidate in its runner, check it at every shape, then time it; the verdict is ours."""
    from kernelevolve.specs.training import judged_source

    candidate, spec, settings = request.candidate, request.spec, request.settings
    ref_module = reference.load_reference(judged_source(spec))
    dtype = reference.torch_dtype(spec.dtype)
    load: dict[str, Any] = {
        "op": "load",
        "device": device,
        "dtype": spec.dtype,
        "backend": candidate.backend,
        "candidate_id": candidate.id,
        "source": candidate.source,
        "precision": spec.reference_precision,
    }
    if spec.backward is not None:  # ModelNew in the runner becomes its training step, as the reference here
        load["training"] = spec.backward.to_json()
    if platform.support(candidate.backend) == "compile_only":
        from kernelevolve.backends.cute import cute_arch

        load.update(compile_only=True, spec=spec.to_json(), arch=cute_arch(platform.arch))
        with _phase(phases, "compile"):
            reply = runner.request(load, max(1.0, deadline - time.monotonic()))
        raise _Stop(failure_fields(reply))
    # (a training step's first calls compile under the device lock: its placeholders are not prepared)
    how = None if spec.backward is not None else _precompile_mode(device, candidate, settings)
    shapes = _precompile_shapes(ref_module, spec.shapes, settings, device, dtype, spec.mode) if how else []
    if how is not None and shapes:
        load["precompile"] = {"how": how, "shapes": shapes}
    with _phase(phases, "load"):
        reply = runner.request(load, max(1.0, deadline - time.monotonic()))
    if reply.get("ok") is not True:
        raise _Stop(failure_fields(reply))
    sandbox = reply.get("sandbox")
    sandboxed = isinstance(sandbox, dict) and sandbox.get("writes_restricted") is True
    precompile_s = reply.get("precompile_s")
    if how is not None and isinstance(precompile_s, (int, float)) and 0 <= precompile_s < 1e6:
        phases["precompile"] = round(float(precompile_s), 4)
        phases["load"] = max(0.0, phases["load"] - phases["precompile"])
    # let go of in `evaluate`; the wait for a neighbour's hold is not this candidate's time (the worker's
    # parent extends its limit as much: `device_lock.on_wait`)
    ended: list[int] = []
    deadline += hold.enter_context(_device_held(device, phases, _own_holders_ended(runner, ended)))
    if ended:
        raise _Stop(
            _fail(
                Status.RUNTIME_ERROR,
                "device_lock_held",
                "the candidate's process took the device lock the judge runs its checks under (it holds "
                "the GPU for one evaluation at a time) and was killed: a candidate must not touch it",
            )
        )
    pairs, max_error, exact_flags = _correctness_stage(
        request, ref_module, runner, arena, device, dtype, phases, deadline
    )
    latency = _timing_stage(request, platform, ref_module, pairs, device, dtype, phases)
    forward: dict[str, Any] = {}  # a training spec's forward pass timed apart (its backward: the difference)
    if spec.backward is not None:
        forward = _timing_stage(
            request, platform, ref_module, pairs, device, dtype, phases, forward_only=True
        )
    cut_short = any(stats.stopped_by == timers.RACE_STOP for stats in latency.values())
    flags = (
        ((CUT_SHORT_FLAG,) if cut_short else ()) + (() if sandboxed else (UNSANDBOXED_FLAG,)) + exact_flags
    )
    return {
        "status": Status.OK,
        "max_abs_error": max_error,
        "latency": latency,
        "forward_latency": forward,
        "flags": flags,
    }


def _own_holders_ended(runner: runner_client.Runner, ended: list[int]) -> Callable[[int], None]:
    """For the judge's wait for its device: a holder that is this evaluation's runner, or a process it
    started, is killed with its tree and noted in `ended` (the lock is released as it dies). Only candidate
    code can be one: the judge has asked its runner for nothing that takes the lock while it waits."""
    from kernelevolve.eval import containment

    def end(pid: int) -> None:
        strays = runner.strays()
        ours = {runner.pid, *strays, *(d for stray in strays for d in containment.descendants_of(stray))}
        if pid in ours:
            ended.append(pid)
            containment.kill_tree(pid)

    return end


UNSANDBOXED_FLAG = "writes_unrestricted"  # the kernel offers no Landlock: the runner could write anywhere


def _runner_writable_dirs(device: str) -> tuple[str, ...]:
    """Where a runner may write besides its own shared-memory folder (which holds its temporary files): the
    compilers' caches (made here first, so a fresh machine's first candidate can compile) and, on GPUs, the
    device files (the driver opens them for writing, and PyTorch's CUDA IPC keeps its reference counts in
    /dev/shm), /proc and /sys. Never a folder that holds what the judge reads back: kernelevolve's cache
    (baselines, the judge's compile caches) or the working directory (runs, sweep records)."""
    caches = [
        *runner_client.separate_caches().values(),  # the runners' own: the judge's are not writable to them
        os.path.expanduser("~/.nv"),
        os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cutlass"),
    ]
    for cache in caches:
        if cache:
            with contextlib.suppress(OSError):
                os.makedirs(cache, exist_ok=True)
    # CUDA's start-up writes under /proc and /sys as well (without them cudaGetDeviceCount fails with
    # error 304 under Landlock: experiments/adversarial_gpu/sandbox_probe.txt)
    devices = ["/dev", "/proc", "/sys"] if device.startswith("cuda") else ["/dev/null"]
    writable = [path for path in dict.fromkeys([*devices, *caches]) if path and os.path.exists(path)]
    return tuple(path for path in writable if not _covers_judge_files(path))


def _covers_judge_files(path: str) -> bool:
    """Whether a runner allowed to write beneath `path` could write what the judge reads back."""
    from kernelevolve.paths import cache_dir

    here = os.path.realpath(path)
    protected = [os.path.realpath(cache_dir()), os.path.realpath(os.getcwd())]
    covers = [p for p in protected if p == here or p.startswith(here.rstrip(os.sep) + os.sep)]
    if covers:
        log.warning("runners may not write %s: it holds %s, which the judge reads back", path, covers[0])
    return bool(covers)


# CUDA graphs capture what runs on their first call; a pass that runs nothing has nothing to capture
_CAPTURES_GRAPHS = ("torch.cuda.graph", "CUDAGraph", "make_graphed_callables")


def _precompile_mode(device: str, candidate: Candidate, settings: EvalSettings) -> str | None:
    """How the runner compiles before the device is taken (Triton on a GPU; see `runner._precompile`),
    or None: OWN_KERNELS_ONLY where forward does only our kernels' work (strict mode, or a source that
    passes the strict checks; a faked pass stopped early gets a real one); FAKED_LIBRARY_WORK where it
    keeps library calls, which must never run unlocked; not at all for library-calling sources that
    capture CUDA graphs. Unlocked GPU work slows the evaluation holding the lock
    (experiments/eval_throughput/2026-11-30_session13)."""
    if not (device.startswith("cuda") and candidate.backend == "triton"):
        return None
    from kernelevolve.eval.own_kernels import kernel_use

    if settings.strict or kernel_use(candidate).own_kernels_only:
        return OWN_KERNELS_ONLY
    if any(marker in candidate.source for marker in _CAPTURES_GRAPHS):
        return None
    return FAKED_LIBRARY_WORK


def _precompile_shapes(
    ref_module: ModuleType,
    shapes: Sequence[ShapeCase],
    settings: EvalSettings,
    device: str,
    dtype: Any,
    mode: str,
) -> list[dict[str, Any]]:
    """Per shape, what the runner needs to build ModelNew and call it on placeholders. Shapes whose
    inputs exceed `precompile_max_input_mb` are left to compile in the locked run: placing and freeing
    gigabytes unlocked slows the locked checks and timing of an evaluation beside it
    (experiments/adversarial_gpu/README.md, session 29)."""
    from kernelevolve.eval.precompile import input_layout, layout_bytes

    cap = settings.precompile_max_input_mb * 2**20
    prepared = []
    for shape in shapes:
        reference.apply_shape(ref_module, shape)
        layout = input_layout(ref_module)
        if cap and layout_bytes(layout, dtype) > cap:
            continue
        prepared.append(
            {
                "shape": shape,
                "init": reference.seeded_init(ref_module, settings.seed, device, dtype),
                "placeholders": layout,
                "mode": mode,
            }
        )
    return prepared


def _check_backend_allowed(backend_name: str, spec: KernelSpec, platform: Platform) -> None:
    if backend_name not in spec.backends:
        raise _Stop(
            _fail(
                Status.REJECTED_STATIC,
                "backend_not_allowed",
                f"spec {spec.name!r} allows backends {list(spec.backends)}, not {backend_name!r}",
            )
        )
    support = platform.support(backend_name)
    if support == "none":
        raise _Stop(
            _fail(
                Status.REJECTED_STATIC,
                "backend_not_runnable",
                f"platform {platform.name!r} supports backend {backend_name!r} as {support!r}; "
                "it cannot run and time it",
            )
        )


def _static_stage(source: str, backend_name: str, strict: bool, reference_source: str) -> None:
    try:
        compile(source, "<candidate>", "exec")
    except (SyntaxError, ValueError):
        return  # loading reports it as a compile error, with the line
    from kernelevolve.eval.static.checks import candidate_issues

    issues = candidate_issues(source, backend_name, strict, reference_source)
    if issues:
        text = "\n".join(
            f"- {issue.code}" + (f" (line {issue.line})" if issue.line else "") + f": {issue.message}"
            for issue in issues
        )
        raise _Stop(_fail(Status.REJECTED_STATIC, issues[0].code, "rejected by static checks:\n" + text))


# ----------------------------------------------------------------------------------- feedback


def _host_memory_bytes(settings: EvalSettings, device: str) -> int | None:
    """The runner's RLIMIT_DATA, on the CPU platform only: CUDA maps its driver memory into the process
    at start-up, so on GPUs such a limit stops CUDA itself (experiments/adversarial_gpu)."""
    if device.startswith("cuda") or settings.host_memory_gb <= 0:
        return None
    return int(settings.host_memory_gb * 2**30)
