"""Evaluate one candidate in the current process: the contract everything else trusts.

Stages, each able to stop with a status: static check -> load -> build ModelNew -> correctness at
every shape -> timing at every shape. Candidate faults become reports; only a broken spec (the
reference itself fails) raises `ReferenceSpecError`. Run this only inside an evaluation child
(`kernelevolve.eval.worker`): candidate code can hang, crash or poison the CUDA context.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import logging
import os
import secrets
import socket
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernelevolve.eval import (
    correctness,
    device_lock,
    judged_run,
    precision,
    reference,
    reference_outputs,
    runner_client,
    timers,
)
from kernelevolve.eval.compile_baseline import compile_before_running
from kernelevolve.eval.feedback import traceback_text
from kernelevolve.eval.precompile import FAKED_LIBRARY_WORK, OWN_KERNELS_ONLY, placeholder_inputs
from kernelevolve.eval.reference import ReferenceSpecError
from kernelevolve.eval.remote import RemoteCandidate, RunnerFailure, failure_fields
from kernelevolve.eval.runner_channel import ReplyError
from kernelevolve.eval.runner_client import RunnerGone, RunnerTimeout
from kernelevolve.eval.shared_tensors import SharedArena
from kernelevolve.fitness import CUT_SHORT_FLAG
from kernelevolve.types import (
    Baseline,
    Candidate,
    EvalReport,
    EvalRequest,
    EvalSettings,
    KernelSpec,
    ShapeCase,
    Status,
    TimingStats,
)

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform

log = logging.getLogger(__name__)

TIMING_INPUT_SETS = 3  # when inputs are slow to make, timed calls rotate through this many sets
FRESH_INPUTS_BUDGET_S = 20.0  # most time spent making fresh inputs for the timed calls of one shape
_MAX_ROTATED_INPUT_BYTES = 4 << 30


class _Stop(Exception):
    """Internal: a stage produced a final report."""

    def __init__(self, report_fields: dict[str, Any]) -> None:
        super().__init__(report_fields.get("feedback", ""))
        self.fields = report_fields


def worker_label(device: str) -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{device}"


def default_device(platform: Platform) -> str:
    return "cpu" if platform.device == "cpu" else f"{platform.device}:0"


def trial_seed(seed: int, shape_index: int, trial: int) -> int:
    """Distinct per (run seed, shape, trial); reference and candidate see identical inputs."""
    return (seed * 1_000_003 + shape_index * 10_007 + trial * 101 + 17) % (2**63 - 1)


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
    # out of device memory (experiments/adversarial_gpu).
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


def warm_device(device: str) -> None:
    """An evaluation child's first uses of the device, made as it starts rather than in its first
    evaluation: the context (outside the lock), then PyTorch's kernels for inputs and comparisons, cuBLAS
    and cuDNN handles and CUDA IPC export (under it: no kernel runs beside another evaluation's). A first
    evaluation in a sweep held the lock about 5 s against about 1 s for the next ones
    (experiments/adversarial_gpu). A failure here is left for the first evaluation to report."""
    if not device.startswith("cuda"):
        return
    try:
        import torch

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
        # the worker's recycle check (a sticky error) replaces this process


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
            _empty_device_cache()


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
            _empty_device_cache()


_collections = itertools.count(1)


def _empty_device_cache() -> None:
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
def _phase(phases: dict[str, float], name: str) -> Iterator[None]:
    """Add the time spent in the block to `phases[name]`: where evaluation time goes, per report."""
    started = time.perf_counter()
    try:
        yield
    finally:
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - started


def _unexpected_error_fields(exc: Exception, candidate_id: str) -> dict[str, Any]:
    """An exception from the harness's own code: a kernel's late device fault, or a harness bug."""
    if correctness.is_device_fault(exc):
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
    # runs and caches, which a runner must not write
    sandbox = runner_client.Sandbox(_runner_writable_dirs(device), _host_memory_bytes(settings, device), True)
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
        if escaped:
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
    candidate, spec, settings = request.candidate, request.spec, request.settings
    ref_module = reference.load_reference(spec.reference_source)
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
    if platform.support(candidate.backend) == "compile_only":
        from kernelevolve.backends.cute import cute_arch

        load.update(compile_only=True, spec=spec.to_json(), arch=cute_arch(platform.arch))
        with _phase(phases, "compile"):
            reply = runner.request(load, max(1.0, deadline - time.monotonic()))
        raise _Stop(failure_fields(reply))
    how = _precompile_mode(device, candidate, settings)
    if how is not None:
        load["precompile"] = {
            "how": how,
            "shapes": _precompile_shapes(ref_module, spec.shapes, settings.seed, device, dtype, spec.mode),
        }
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
    hold.enter_context(_device_held(device, phases))  # let go of in `evaluate`
    pairs, max_error, exact_flags = _correctness_stage(
        request, ref_module, runner, arena, device, dtype, phases, deadline
    )
    latency = _timing_stage(request, platform, ref_module, pairs, device, dtype, phases)
    cut_short = any(stats.stopped_by == timers.RACE_STOP for stats in latency.values())
    flags = (
        ((CUT_SHORT_FLAG,) if cut_short else ()) + (() if sandboxed else (UNSANDBOXED_FLAG,)) + exact_flags
    )
    return {"status": Status.OK, "max_abs_error": max_error, "latency": latency, "flags": flags}


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
    (experiments/eval_throughput)."""
    if not (device.startswith("cuda") and candidate.backend == "triton"):
        return None
    from kernelevolve.own_kernels import kernel_use

    if settings.strict or kernel_use(candidate).own_kernels_only:
        return OWN_KERNELS_ONLY
    if any(marker in candidate.source for marker in _CAPTURES_GRAPHS):
        return None
    return FAKED_LIBRARY_WORK


def _precompile_shapes(
    ref_module: ModuleType, shapes: Sequence[ShapeCase], seed: int, device: str, dtype: Any, mode: str
) -> list[dict[str, Any]]:
    """Per shape, what the runner needs to build ModelNew and call it on placeholders."""
    from kernelevolve.eval.precompile import input_layout

    prepared = []
    for shape in shapes:
        reference.apply_shape(ref_module, shape)
        prepared.append(
            {
                "shape": shape,
                "init": reference.seeded_init(ref_module, seed, device, dtype),
                "placeholders": input_layout(ref_module),
                "mode": mode,
            }
        )
    return prepared


@contextlib.contextmanager
def _device_held(device: str, phases: dict[str, float]) -> Iterator[None]:
    with device_lock.hold_device(device) as waited:
        if device.startswith("cuda"):
            phases["device_wait"] = phases.get("device_wait", 0.0) + waited
        yield


def _correctness_stage(
    request: EvalRequest,
    ref_module: ModuleType,
    runner: runner_client.Runner,
    arena: SharedArena,
    device: str,
    dtype: Any,
    phases: dict[str, float],
    deadline: float,
) -> tuple[list[tuple[Any, RemoteCandidate]], float, tuple[str, ...]]:
    """Every shape, `correctness_trials` fresh seeded input sets each; returns the (reference, candidate)
    pair of each shape, for the timing to use the same instances, the max abs error, and the verdict at exact
    fp32 as a flag where the spec's precision is PyTorch's default and that differs (`_exact_opinion`)."""
    spec, settings = request.spec, request.settings
    max_error = 0.0
    pairs: list[tuple[Any, RemoteCandidate]] = []
    flags_by_shape: list[str] = []
    for index, shape in enumerate(spec.shapes):
        where = _shape_text(shape.name, shape.params, len(spec.shapes))
        with _phase(phases, "build"):
            ref_model, remote = _build_pair(
                ref_module,
                shape,
                index,
                settings.seed,
                device,
                dtype,
                runner,
                arena,
                deadline,
                where,
                settings.strict,
                spec.mode,
            )
        seeds = [trial_seed(settings.seed, index, t) for t in range(settings.correctness_trials)]
        make_inputs = input_maker(ref_module, device, dtype, settings.input_distribution)
        key = reference_outputs.trials_key(
            spec.key,  # the reference's source and everything else that decides its outputs (mode, precision)
            f"{shape.name} {sorted(shape.params.items())} {settings.input_distribution}",
            settings.seed,
            seeds,
            device,
            dtype,
        )
        budget = int(settings.reference_cache_mb * 2**20)
        expected = reference_outputs.TrialOutputs(ref_model, key, budget)
        exact = _exact_opinion(spec, ref_model, device, key, budget)
        with _phase(phases, "correctness"):
            verdict = correctness.check_correctness(
                ref_model,
                _remote_only,
                make_inputs,
                seeds,
                spec.atol,
                spec.rtol,
                expected,
                remote=remote,
                second_opinion=exact,
            )
        if verdict.stateful:
            expected.refuse()
        with _phase(phases, "reference"):
            _keep_reference_outputs(expected, make_inputs, seeds)
            if exact is not None and verdict.second_opinion is not None:
                _keep_reference_outputs(exact, make_inputs, seeds)
        max_error = max(max_error, verdict.max_abs_error)
        exact_flags = _exact_flags(verdict.second_opinion)
        if exact_flags:
            flags_by_shape.append(exact_flags[0])
        if not verdict.ok:
            fields = _fail(Status.INCORRECT, verdict.check, f"incorrect{where}: {verdict.feedback}")
            fields.update(max_abs_error=verdict.max_abs_error, flags=verdict.flags + exact_flags)
            raise _Stop(fields)
        if request.candidate.backend == "triton" and remote.launches == 0:
            raise _Stop(
                _fail(
                    Status.INCORRECT,
                    "no_kernel_ran",
                    f"no Triton kernel was launched in any checked call{where}: the output came from elsewhere "
                    "(a PyTorch fallback path, a cached value); the candidate's own kernels must do the work",
                )
            )
        pairs.append((ref_model, remote))
    return pairs, max_error, _exact_verdict(flags_by_shape)


def _exact_opinion(
    spec: KernelSpec, ref_model: Any, device: str, key: reference_outputs.TrialsKey, budget: int
) -> reference_outputs.TrialOutputs | None:
    """The reference's outputs at exact fp32, where the spec checks at PyTorch's defaults (KernelBench's
    protocol) and the two differ (cuDNN convolutions on a GPU in TF32): the verdict at the other precision,
    recorded beside the spec's and deciding nothing. The two disagree where a kernel matches one rounding and
    not the other (L1/70, experiments/adversarial_gpu)."""
    if spec.reference_precision != precision.FRAMEWORK_DEFAULT or not precision.precision_differs(
        ref_model, device
    ):
        return None
    exact_key = dataclasses.replace(key, reference_digest=key.reference_digest + ":" + precision.EXACT_FP32)
    return reference_outputs.TrialOutputs(_AtExactFp32(ref_model), exact_key, budget)


class _AtExactFp32:
    """The reference model, run with exact fp32 convolutions."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __call__(self, *args: Any) -> Any:
        with precision.exact_fp32():
            return self.model(*args)


def _exact_flags(opinion: tuple[bool, float] | None) -> tuple[str, ...]:
    if opinion is None:
        return ()
    return (precision.EXACT_FP32_CORRECT if opinion[0] else precision.EXACT_FP32_INCORRECT,)


def _exact_verdict(per_shape: list[str]) -> tuple[str, ...]:
    if precision.EXACT_FP32_INCORRECT in per_shape:
        return (precision.EXACT_FP32_INCORRECT,)
    return (precision.EXACT_FP32_CORRECT,) if per_shape else ()


def _remote_only(*args: Any) -> Any:
    raise AssertionError("the candidate runs in its runner")


def _keep_reference_outputs(
    expected: reference_outputs.TrialOutputs, make_inputs: Callable[[int], list[Any]], seeds: list[int]
) -> None:
    """Finish the reference's trials for the next evaluations; a failure here only means none are kept
    (the next check runs the reference itself and reports what it raises)."""
    try:
        expected.complete(make_inputs, seeds)
    except Exception:  # noqa: BLE001 - the reference's own error surfaces in the next evaluation's check
        log.debug("reference outputs not kept", exc_info=True)


def _timing_stage(
    request: EvalRequest,
    platform: Platform,
    ref_module: ModuleType,
    pairs: list[tuple[Any, RemoteCandidate]],
    device: str,
    dtype: Any,
    phases: dict[str, float],
) -> dict[str, TimingStats]:

    spec, settings = request.spec, request.settings
    latency: dict[str, TimingStats] = {}
    race, settle = _race(request), _settle(settings)
    message = {
        "trials": settings.timing_trials,
        "warmup": settings.warmup_trials,
        "flush_l2": settings.flush_l2,
        "l2_bytes": platform.l2_bytes,
        "launch_cover_us": settings.launch_cover_us,
        "race": race,
        "settle": settle,
        "warmup_enough_ms": settings.warmup_enough_ms,
    }
    # Timed calls' inputs follow from a seed drawn afresh for this evaluation, not the run's: a runner can
    # leave files behind (its compiler cache is shared), and outputs an earlier candidate recorded for
    # inputs every evaluation shares would answer a later one's timed calls with no work done
    # (tests/adversarial/test_cross_evaluation.py).
    timing_seed = secrets.randbits(62)
    for index, shape in enumerate(spec.shapes):
        reference.apply_shape(ref_module, shape)
        ref_model, remote = pairs[index]

        def make_set(k: int, index: int = index) -> list[Any]:
            seed = trial_seed(timing_seed, index, 1000 + k)
            try:
                return reference.make_inputs(ref_module, seed, device, dtype, on_device=True)
            except Exception as exc:
                raise ReferenceSpecError(
                    f"reference get_inputs() failed: {type(exc).__name__}: {exc}"
                ) from exc

        timed = judged_run.TimedShape(ref_model, remote)
        with _phase(phases, "timing"):  # split below into its setup, the runner's calls and the checks
            stats = latency[shape.name] = judged_run.time_shape(
                timed,
                message,
                make_set,
                spec.atol,
                spec.rtol,
                trial_seed(timing_seed, index, 7),
                device,
                settings.warmup_trials + settings.timing_trials,
            )
        for part, seconds in (("timing_setup", timed.setup_s), ("timed_checks", timed.checks_s)):
            phases[part] = phases.get(part, 0.0) + seconds
            phases["timing"] -= seconds
        floor_ms = _roofline_floor_ms(spec, shape, platform, timed.output_bytes, device)
        if floor_ms is not None and stats.median_ms < floor_ms:
            where = _shape_text(shape.name, shape.params, len(spec.shapes))
            raise _Stop(
                {
                    **_fail(
                        Status.INCORRECT,
                        "timing_below_roofline",
                        f"timed at {stats.median_ms:.4g} ms per call{where}, below the {floor_ms:.4g} ms the "
                        f"platform needs at its peaks to write the output and do the reference's FLOPs",
                    ),
                    "flags": ("timing_forged",),
                }
            )
    return latency


_FLOPS: dict[tuple[str, str], float | None] = {}


def _reference_flops(spec: KernelSpec, shape: ShapeCase) -> float | None:
    """The reference's matmul/convolution FLOPs at `shape` (counted on meta tensors), once per process."""
    key = (spec.reference_source, f"{shape.name} {sorted(shape.params.items())}")
    if key not in _FLOPS:
        from kernelevolve.llm.diagnosis import estimate_traffic

        try:
            _FLOPS[key] = estimate_traffic(spec, shape)[1]
        except Exception:  # noqa: BLE001 - a reference that cannot run on meta tensors: no FLOP floor
            _FLOPS[key] = None
    return _FLOPS[key]


def _roofline_floor_ms(
    spec: KernelSpec, shape: ShapeCase, platform: Platform, output_bytes: int, device: str
) -> float | None:
    """The least time any kernel needs on this platform: writing the output at peak bandwidth, or the
    reference's matmul/convolution FLOPs at the platform's fastest 16-bit tensor-core peak (a candidate
    may split fp32 work into such passes). GPUs only: CPU timings are the interpreter's."""
    if not device.startswith("cuda") or platform.peak_bandwidth_gbs <= 0:
        return None
    write_ms = output_bytes / (platform.peak_bandwidth_gbs * 1e6)
    flops_ms = 0.0
    peak = max((platform.peak_tflops.get(k, 0.0) for k in ("bf16", "fp16", "tf32", "fp32")), default=0.0)
    if peak > 0:
        flops_ms = (_reference_flops(spec, shape) or 0.0) / (peak * 1e9)
    return max(write_ms, flops_ms)


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
    from kernelevolve.eval.static_checks import candidate_issues

    issues = candidate_issues(source, backend_name, strict, reference_source)
    if issues:
        text = "\n".join(
            f"- {issue.code}" + (f" (line {issue.line})" if issue.line else "") + f": {issue.message}"
            for issue in issues
        )
        raise _Stop(_fail(Status.REJECTED_STATIC, issues[0].code, "rejected by static checks:\n" + text))


def _build_pair(
    ref_module: ModuleType,
    shape: ShapeCase,
    index: int,
    seed: int,
    device: str,
    dtype: Any,
    runner: runner_client.Runner,
    arena: SharedArena,
    deadline: float,
    where: str,
    strict: bool,
    mode: str = "as_built",
) -> tuple[Any, RemoteCandidate]:
    """The reference here and ModelNew in the runner, from one constructor call (same generator states:
    parameters made in the same order get the same values) and the same perturbed constant state. Both
    on the device where both can be built there, else both on the host, whose errors are the ones
    reported (see reference.build_model_on)."""
    reference.apply_shape(ref_module, shape)

    def build_reference(on_device: bool) -> tuple[Any, reference.InitCall, list[reference.ConstantState]]:
        init = reference.seeded_init(ref_module, seed, device, dtype)
        try:
            model = reference.construct(ref_module.Model, init, device, dtype, on_device=on_device, mode=mode)
        except Exception as exc:
            raise ReferenceSpecError(
                f"reference Model{where} cannot be built: {type(exc).__name__}: {exc}"
            ) from exc
        return model, init, reference.perturbed_constant_state(model, seed)

    on_device = reference.initialises_on_device(device)
    try:
        ref_model, init, state = build_reference(on_device)
    except ReferenceSpecError:
        if not on_device:
            raise
        on_device = False
        ref_model, init, state = build_reference(False)
    try:
        remote = judged_run.build_remote(
            runner, arena, index, shape, init, state, on_device, deadline, where, strict, mode
        )
    except RunnerFailure:
        if not on_device:
            raise
        del ref_model  # a constructor that works on the host only: both there
        ref_model, init, state = build_reference(False)
        remote = judged_run.build_remote(
            runner, arena, index, shape, init, state, False, deadline, where, strict, mode
        )
    return ref_model, remote


def input_maker(
    ref_module: ModuleType, device: str, dtype: Any, distribution: str = "normal"
) -> Callable[[int], list[Any]]:
    """seed -> correctness inputs: the one recipe, also used by the export's re-verification on load.
    A `distribution` other than "normal" redraws the floating inputs from it (`input_distributions`)."""

    # Made on the device: the reference runs on these same tensors, so nothing needs host-side values,
    # and host RNG plus a copy for GPU-sized inputs cost seconds per evaluation.
    def make(seed: int) -> list[Any]:
        try:
            made = reference.make_inputs(ref_module, seed, device, dtype, on_device=True)
            if distribution == "normal":
                return made
            from kernelevolve.eval.input_distributions import distributed_inputs

            return distributed_inputs(made, distribution, seed)
        except ReferenceSpecError:
            raise
        except Exception as exc:
            raise ReferenceSpecError(f"reference get_inputs() failed: {type(exc).__name__}: {exc}") from exc

    return make


def _timing_inputs(
    ref_module: ModuleType, settings: EvalSettings, shape_index: int, device: str, dtype: Any
) -> timers.InputSource:
    """Fresh inputs for every timed call when making them is cheap, else a few sets to rotate.

    Fresh contents per call mean a result cache keyed by input contents or addresses never hits
    while being timed. Timing inputs are made on the device (fast; their values need not match
    any other device's).
    """

    def make(call: int) -> list[Any]:
        seed = trial_seed(settings.seed, shape_index, 1000 + call)
        try:
            return reference.make_inputs(ref_module, seed, device, dtype, on_device=True)
        except Exception as exc:
            raise ReferenceSpecError(f"reference get_inputs() failed: {type(exc).__name__}: {exc}") from exc

    started = time.perf_counter()
    first = make(0)
    cost = time.perf_counter() - started
    if cost * (settings.warmup_trials + settings.timing_trials) <= FRESH_INPUTS_BUDGET_S:
        made = {0: first}
        return lambda call: made.pop(call) if call in made else make(call)
    log.info("get_inputs() takes %.2f s: timing rotates %d input sets", cost, TIMING_INPUT_SETS)
    size = sum(t.numel() * t.element_size() for t in correctness._tensor_leaves(first))
    count = TIMING_INPUT_SETS if size * TIMING_INPUT_SETS <= _MAX_ROTATED_INPUT_BYTES else 1
    return [first] + [make(k) for k in range(1, count)]


def _time(
    fn: Callable[..., Any],
    input_sets: timers.InputSource,
    device: str,
    settings: EvalSettings,
    platform: Platform,
    race: timers.Race | None = None,
    settle: timers.Settle | None = None,
) -> TimingStats:
    return timers.time_callable(
        fn,
        input_sets,
        device,
        trials=settings.timing_trials,
        warmup=settings.warmup_trials,
        flush_l2=settings.flush_l2,
        l2_bytes=platform.l2_bytes,
        launch_cover_us=settings.launch_cover_us,
        race=race,
        settle=settle,
        warmup_enough_ms=settings.warmup_enough_ms,
    )


def _settle(settings: EvalSettings) -> timers.Settle | None:
    """Settling for candidates; baselines are always timed in full."""
    if settings.settle_relative_halfwidth <= 0 or settings.settle_min_trials >= settings.timing_trials:
        return None
    return timers.Settle(
        settings.settle_min_trials,
        settings.settle_relative_halfwidth,
        long_call_ms=settings.settle_long_call_ms,
    )


def _race(request: EvalRequest) -> timers.Race | None:
    """Racing against the incumbent of the candidate's kind, for one-shape specs only: with several
    shapes a loser at one could still win the geomean, and must then be timed in full."""
    settings = request.settings
    if request.incumbent_ms is None or settings.race_margin <= 0 or len(request.spec.shapes) != 1:
        return None
    if settings.race_min_trials >= settings.timing_trials:
        return None
    return timers.Race(request.incumbent_ms * settings.race_margin, settings.race_min_trials)


def measure_baselines(
    spec: KernelSpec, platform: Platform, settings: EvalSettings, device: str | None = None
) -> dict[str, Baseline]:
    """Eager and torch.compile (default mode) timings of the reference at every shape, same timer."""

    device = device or default_device(platform)
    timers.bind_clocks()
    ref_module = reference.load_reference(spec.reference_source)
    dtype = reference.torch_dtype(spec.dtype)
    try:
        with precision.baseline_precision():
            return _measure_baselines(spec, platform, settings, device, ref_module, dtype)
    finally:
        _release_memory(device)


def _measure_baselines(
    spec: KernelSpec,
    platform: Platform,
    settings: EvalSettings,
    device: str,
    ref_module: ModuleType,
    dtype: Any,
) -> dict[str, Baseline]:
    baselines: dict[str, Baseline] = {}
    for index, shape in enumerate(spec.shapes):
        # The lock is taken per shape and per phase (`_shape_baseline`): other children may run between.
        baselines[shape.name] = _shape_baseline(spec, platform, settings, device, ref_module, dtype, index)
    return baselines


def _shape_baseline(
    spec: KernelSpec,
    platform: Platform,
    settings: EvalSettings,
    device: str,
    ref_module: ModuleType,
    dtype: Any,
    index: int,
) -> Baseline:
    import torch

    shape = spec.shapes[index]
    reference.apply_shape(ref_module, shape)
    with _device_held(device, {}):
        model = reference.build_model(ref_module.Model, ref_module, settings.seed, device, dtype, spec.mode)
        input_sets = _timing_inputs(ref_module, settings, index, device, dtype)
        eager = _time(model, input_sets, device, settings, platform)
        eager_exact = _exact_eager(model, input_sets, device, settings, platform)
        accuracy = _BaselineAccuracy(model, timers.input_getter(input_sets)(0), spec)
        eager_accuracy = accuracy.of(model, "eager")
    compiled: TimingStats | None = None
    compiled_accuracy: tuple[bool | None, float | None] = (None, None)
    compile_error = ""

    def time_compiled(
        label: str, cuda_graphs: bool = False
    ) -> tuple[TimingStats, tuple[bool | None, float | None]]:
        return _compiled_timing(
            model, input_sets, accuracy, ref_module, device, dtype, settings, platform, label, cuda_graphs
        )

    if settings.measure_compile_baseline:
        try:
            _compile_in_process()
            torch._dynamo.reset()  # fresh compile per shape: no dynamic-shape recompiles
            compiled, compiled_accuracy = time_compiled("torch.compile")
        except Exception as exc:
            compile_error = f"{type(exc).__name__}: {str(exc).strip()[:2000]}"
            log.warning("torch.compile baseline failed for %s/%s: %s", spec.name, shape.name, compile_error)
    compiled_exact: tuple[TimingStats | None, bool | None] = (None, None)
    if compiled_accuracy[0] is False and precision.precision_differs(model, device):
        compiled_exact = _exact_compiled(time_compiled)
    compiled_graphs = _graphed_compiled(time_compiled) if _graphs_worth_timing(compiled, device) else None
    return Baseline(
        eager=eager,
        compiled=compiled,
        compile_error=compile_error,
        eager_exact=eager_exact,
        eager_within_tolerance=eager_accuracy[0],
        eager_max_error=eager_accuracy[1],
        compiled_within_tolerance=compiled_accuracy[0],
        compiled_max_error=compiled_accuracy[1],
        compiled_exact=compiled_exact[0],
        compiled_exact_within_tolerance=compiled_exact[1],
        compiled_graphs=compiled_graphs,
    )


def _compiled_timing(
    model: Any,
    input_sets: Any,
    accuracy: _BaselineAccuracy,
    ref_module: ModuleType,
    device: str,
    dtype: Any,
    settings: EvalSettings,
    platform: Platform,
    label: str,
    cuda_graphs: bool = False,
) -> tuple[TimingStats, tuple[bool | None, float | None]]:
    """torch.compile's timing and accuracy. Compiled unlocked, with nothing run on the device; the first
    real call (Inductor's autotuning benchmarks run in it), the timing and the accuracy take the lock.
    With `cuda_graphs` the graphs are recorded in the warm-up calls, before the timed ones."""
    import torch

    def run_and_time(compiled_model: Any) -> tuple[TimingStats, tuple[bool | None, float | None]]:
        with _device_held(device, {}):
            with torch.no_grad():
                compiled_model(*timers.input_getter(input_sets)(0))
            timing = _time(compiled_model, input_sets, device, settings, platform)
            return timing, accuracy.of(compiled_model, label)

    placeholders = placeholder_inputs(ref_module, device, dtype)
    try:
        return run_and_time(compile_before_running(model, placeholders, device, cuda_graphs=cuda_graphs))
    except Exception as exc:
        # Compiling on placeholders fakes the device's work; a model whose Python reads what that work
        # returned can fail there (L3/32, experiments/full_sweep_h200) though it compiles for real. A
        # baseline is worth the lock held for its compile: compile as torch.compile does, on the first call.
        log.warning(
            "%s compiled on placeholders failed (%s: %s); compiling on its first call",
            label,
            type(exc).__name__,
            str(exc).strip()[:500],
        )
    torch._dynamo.reset()
    return run_and_time(torch.compile(model, options={"triton.cudagraphs": True} if cuda_graphs else None))


def _exact_compiled(
    time_compiled: Callable[[str], tuple[TimingStats, tuple[bool | None, float | None]]],
) -> tuple[TimingStats | None, bool | None]:
    """torch.compile compiled, run and timed (`time_compiled`, as the default one is) at the candidates'
    precision (cuDNN convolutions without TF32), with whether its output meets the tolerance: the
    torch.compile a user who needs the tolerance would run, where the default one's output misses it. A
    failure only loses this extra figure."""
    import torch

    try:
        torch._dynamo.reset()  # Dynamo guards on the precision flags: a compile of its own
        with precision.exact_fp32():
            timing, (within, _) = time_compiled("torch.compile exact")
        return timing, within
    except Exception as exc:
        log.warning("torch.compile at exact fp32 could not be timed: %s: %s", type(exc).__name__, exc)
        return None, None
    finally:
        torch._dynamo.reset()


def _graphs_worth_timing(compiled: TimingStats | None, device: str) -> bool:
    """CUDA graphs only cut the host's launch time: worth timing where that set the default's time."""
    return compiled is not None and compiled.host_bound and device.startswith("cuda")


def _graphed_compiled(
    time_compiled: Callable[..., tuple[TimingStats, tuple[bool | None, float | None]]],
) -> TimingStats | None:
    """torch.compile with CUDA graphs, compiled, run and timed as the default one is (`time_compiled`),
    for a default one whose time the host's launches set. A failure (a graph that cannot be captured) only
    loses this extra figure."""
    import torch

    try:
        torch._dynamo.reset()  # a compile of its own, not the default one's cached code
        timing, _ = time_compiled("torch.compile with CUDA graphs", cuda_graphs=True)
        return timing
    except Exception as exc:
        log.warning("torch.compile with CUDA graphs could not be timed: %s: %s", type(exc).__name__, exc)
        return None
    finally:
        torch._dynamo.reset()


class _BaselineAccuracy:
    """A baseline's output, at the precision it is timed at, against the reference at the candidates'
    precision, with the spec's tolerance. A failure here only loses these figures, never the timings."""

    def __init__(self, model: Any, inputs: Sequence[Any], spec: KernelSpec) -> None:
        import torch

        self.inputs, self.spec = inputs, spec
        try:
            with torch.no_grad(), precision.exact_fp32():
                correctness.seed_forward(0)  # random draws in forward alike (L3/35)
                self.expected: Any = model(*correctness.clone_tree(inputs))
        except Exception as exc:
            log.warning("baseline accuracy not checked: the reference raised %s: %s", type(exc).__name__, exc)
            self.expected = None

    def of(self, model: Any, label: str) -> tuple[bool | None, float | None]:
        import torch

        if self.expected is None:
            return None, None
        try:
            with torch.no_grad():
                correctness.seed_forward(0)
                got = model(*correctness.clone_tree(self.inputs))
            within, worst = correctness.within_tolerance(self.expected, got, self.spec.atol, self.spec.rtol)
        except Exception as exc:
            log.warning("%s's accuracy not checked: %s: %s", label, type(exc).__name__, exc)
            return None, None
        return within, worst


def _exact_eager(
    model: Any, input_sets: Any, device: str, settings: EvalSettings, platform: Platform
) -> TimingStats | None:
    """Eager at the candidates' precision where it differs; a failure only loses this extra figure."""
    if not precision.precision_differs(model, device):
        return None
    try:
        with precision.exact_fp32():
            return _time(model, input_sets, device, settings, platform)
    except Exception as exc:
        log.warning("eager at exact fp32 could not be timed: %s: %s", type(exc).__name__, exc)
        return None


def _compile_in_process() -> None:
    """Evaluation children are daemon processes, which may not start a compile-worker pool."""
    import torch._inductor.config as inductor_config

    inductor_config.compile_threads = 1


# ----------------------------------------------------------------------------------- feedback


def _fail(status: Status, error_name: str, feedback: str) -> dict[str, Any]:
    return {"status": status, "error_name": error_name, "feedback": feedback}


def _shape_text(name: str, params: dict[str, Any], count: int) -> str:
    if count == 1 and not params:
        return ""
    detail = ", ".join(f"{k}={v}" for k, v in params.items())
    return f" at shape {name!r}" + (f" ({detail})" if detail else "")


def _host_memory_bytes(settings: EvalSettings, device: str) -> int | None:
    """The runner's RLIMIT_DATA, on the CPU platform only: CUDA maps its driver memory into the process
    at start-up, so on GPUs such a limit stops CUDA itself (experiments/adversarial_gpu)."""
    if device.startswith("cuda") or settings.host_memory_gb <= 0:
        return None
    return int(settings.host_memory_gb * 2**30)
