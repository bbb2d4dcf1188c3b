"""Evaluate one candidate in the current process: the contract everything else trusts.

Stages, each able to stop with a status: static check -> load -> build ModelNew -> correctness at
every shape -> timing at every shape. Candidate faults become reports; only a broken spec (the
reference itself fails) raises `ReferenceSpecError`. Run this only inside an evaluation child
(`kernelevolve.eval.worker`): candidate code can hang, crash or poison the CUDA context.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import os
import re
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernelevolve.eval import correctness, device_lock, precision, reference, reference_outputs, timers
from kernelevolve.eval.compile_baseline import compile_before_running
from kernelevolve.eval.precompile import placeholder_inputs, precompile
from kernelevolve.eval.reference import ReferenceSpecError
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
    from kernelevolve.backends.base import Backend
    from kernelevolve.platforms import Platform

log = logging.getLogger(__name__)

TRACEBACK_LINES = 15
TIMING_INPUT_SETS = 3  # when inputs are slow to make, timed calls rotate through this many sets
FRESH_INPUTS_BUDGET_S = 20.0  # most time spent making fresh inputs for the timed calls of one shape
_MAX_ROTATED_INPUT_BYTES = 4 << 30
_counter = itertools.count()


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
    module_name = f"kernelevolve_candidate_{request.candidate.id}_{next(_counter)}"
    fields: dict[str, Any]
    phases: dict[str, float] = {}
    try:
        with precision.exact_fp32():
            fields = _run_stages(request, platform, device, module_name, phases)
        drain_device(device)  # a late fault of this candidate's kernels is this candidate's
    except _Stop as stop:
        fields = stop.fields
    except ReferenceSpecError:
        raise
    except Exception as exc:
        fields = _unexpected_error_fields(exc, request.candidate.id, module_name)
    finally:
        sys.modules.pop(module_name, None)
        drain_device(device, quiet=True)
        _release_memory(device)
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


def _release_memory(device: str) -> None:
    """Free what the last evaluation (or baseline measurement) left: young cycles every time,
    everything now and then, and the CUDA cache when it holds much.

    A candidate's module, kernels and failed frames sit in reference cycles; a young-generation
    pass frees most of them. A full pass runs every FULL_GC_EVERY evaluations, or at once when
    device memory is still held (large tensors kept alive by a cycle must not pile up).
    """
    gc.collect(1)
    if next(_collections) % FULL_GC_EVERY == 0 or _device_memory_held(device) > _GPU_MEMORY_WORTH_RELEASING:
        gc.collect()
    if device.startswith("cuda"):
        # Cached blocks (the poisoned-output pool is 4x an output) would starve the other children and
        # problems sharing this GPU: a multi-GB reference then fails with out-of-memory for no fault of its own.
        _empty_device_cache()


_collections = itertools.count(1)


def _empty_device_cache() -> None:
    import torch

    if torch.cuda.memory_reserved() > _GPU_MEMORY_WORTH_RELEASING:  # small pools are kept: reallocating costs
        torch.cuda.empty_cache()


def _device_memory_held(device: str) -> int:
    if not device.startswith("cuda"):
        return 0
    import torch

    return int(torch.cuda.memory_allocated())


@contextlib.contextmanager
def _phase(phases: dict[str, float], name: str) -> Iterator[None]:
    """Add the time spent in the block to `phases[name]`: where evaluation time goes, per report."""
    started = time.perf_counter()
    try:
        yield
    finally:
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - started


def _unexpected_error_fields(exc: Exception, candidate_id: str, module_name: str) -> dict[str, Any]:
    """An exception from the harness's own code: a kernel's late device fault, or a harness bug."""
    if correctness.is_device_fault(exc):
        return _fail(
            Status.RUNTIME_ERROR,
            type(exc).__name__,
            "a device error surfaced after the kernel ran (asynchronous kernel fault):\n"
            + _traceback_text(exc, module_name),
        )
    log.exception("harness error while evaluating %s", candidate_id)
    fields = _fail(
        Status.RUNTIME_ERROR,
        type(exc).__name__,
        "internal harness error: " + _traceback_text(exc, module_name),
    )
    fields["flags"] = ("harness_error",)  # so a harness bug never passes for a kernel fault unnoticed
    return fields


def _run_stages(
    request: EvalRequest, platform: Platform, device: str, module_name: str, phases: dict[str, float]
) -> dict[str, Any]:
    from kernelevolve.backends import get_backend

    candidate, spec, settings = request.candidate, request.spec, request.settings
    try:
        backend = get_backend(candidate.backend)
    except KeyError as exc:
        raise _Stop(_fail(Status.REJECTED_STATIC, "unknown_backend", str(exc))) from None
    _check_backend_allowed(candidate.backend, spec, platform)
    with _phase(phases, "static"):
        _static_stage(candidate.source, candidate.backend, settings.strict, spec.reference_source)
    if platform.support(candidate.backend) == "compile_only":
        with _phase(phases, "compile"):
            raise _Stop(_compile_only_stage(request, platform, backend))

    timers.bind_clocks()  # before candidate code can patch the clocks
    try:
        with _phase(phases, "load"):
            module = backend.load(candidate.source, module_name)
    except (Exception, SystemExit) as exc:
        raise _Stop(_exception_fields(exc, backend, "load", "loading the kernel", module_name)) from None
    model_new = getattr(module, "ModelNew", None)
    if not isinstance(model_new, type):
        raise _Stop(
            _fail(Status.COMPILE_ERROR, "missing_ModelNew", "the source does not define class ModelNew")
        )

    ref_module = reference.load_reference(spec.reference_source)
    dtype = reference.torch_dtype(spec.dtype)
    how = _precompile_mode(device, candidate, settings)
    if how is not None:
        with _phase(phases, "precompile"):
            _precompile(how, model_new, ref_module, spec.shapes, settings.seed, device, dtype)
    with _device_held(device, phases):
        max_error = _correctness_stage(
            request, ref_module, model_new, device, dtype, backend, module_name, phases
        )
        latency = _timing_stage(
            request, platform, ref_module, model_new, device, dtype, backend, module_name, phases
        )
    cut_short = any(stats.stopped_by == timers.RACE_STOP for stats in latency.values())
    flags = (CUT_SHORT_FLAG,) if cut_short else ()
    return {"status": Status.OK, "max_abs_error": max_error, "latency": latency, "flags": flags}


OWN_KERNELS_ONLY = "own_kernels_only"
FAKED_LIBRARY_WORK = "faked_library_work"
# CUDA graphs capture what runs on their first call; a pass that runs nothing has nothing to capture
_CAPTURES_GRAPHS = ("torch.cuda.graph", "CUDAGraph", "make_graphed_callables")


def _precompile_mode(device: str, candidate: Candidate, settings: EvalSettings) -> str | None:
    """How to compile before taking the device (Triton on a GPU; see `_precompile`), or None:
    OWN_KERNELS_ONLY where forward does only our kernels' work (strict mode, or a source that passes the
    strict checks); FAKED_LIBRARY_WORK where it keeps library calls, which must never run unlocked; not
    at all for library-calling sources that capture CUDA graphs."""
    if not (device.startswith("cuda") and candidate.backend == "triton"):
        return None
    from kernelevolve.own_kernels import kernel_use

    if settings.strict or kernel_use(candidate).own_kernels_only:
        return OWN_KERNELS_ONLY
    if any(marker in candidate.source for marker in _CAPTURES_GRAPHS):
        return None
    return FAKED_LIBRARY_WORK


def _precompile(
    how: str,
    model_new: type,
    ref_module: ModuleType,
    shapes: Sequence[ShapeCase],
    seed: int,
    device: str,
    dtype: Any,
) -> None:
    """Compile before the lock with PyTorch's device work faked. Own-kernel candidates whose faked pass
    stopped early (data-dependent host code such as `.item()`) get a real pass for what it missed: their
    PyTorch ops are data movement, which may then run unlocked. Unlocked GPU work slows the evaluation
    holding the lock: a neighbour's stream of small kernels made Tanh's median 17% slower and its timing
    3x longer (experiments/eval_throughput/2026-11-30_session13)."""
    stopped = precompile(model_new, ref_module, shapes, seed, device, dtype, fake_device_work=True)
    if stopped and how == OWN_KERNELS_ONLY:
        precompile(model_new, ref_module, shapes, seed, device, dtype, fake_device_work=False)


@contextlib.contextmanager
def _device_held(device: str, phases: dict[str, float]) -> Iterator[None]:
    with device_lock.hold_device(device) as waited:
        if device.startswith("cuda"):
            phases["device_wait"] = phases.get("device_wait", 0.0) + waited
        yield


def _correctness_stage(
    request: EvalRequest,
    ref_module: ModuleType,
    model_new: type,
    device: str,
    dtype: Any,
    backend: Backend,
    module_name: str,
    phases: dict[str, float],
) -> float:
    """Every shape, `correctness_trials` fresh seeded input sets each; returns the max abs error."""
    spec, settings = request.spec, request.settings
    max_error = 0.0
    for index, shape in enumerate(spec.shapes):
        where = _shape_text(shape.name, shape.params, len(spec.shapes))
        with _phase(phases, "build"):
            models = _build_models(
                ref_module, model_new, shape, settings.seed, device, dtype, backend, module_name, where
            )
        seeds = [trial_seed(settings.seed, index, t) for t in range(settings.correctness_trials)]
        make_inputs = input_maker(ref_module, device, dtype)
        key = reference_outputs.trials_key(
            spec.reference_source,
            f"{shape.name} {sorted(shape.params.items())}",
            settings.seed,
            seeds,
            device,
            dtype,
        )
        expected = reference_outputs.TrialOutputs(models[0], key, int(settings.reference_cache_mb * 2**20))
        try:
            with _phase(phases, "correctness"):
                verdict = correctness.check_correctness(
                    models[0], models[1], make_inputs, seeds, spec.atol, spec.rtol, expected
                )
            with _phase(phases, "reference"):
                _keep_reference_outputs(expected, make_inputs, seeds)
        except correctness.CandidateFailure as failure:
            fields = _exception_fields(
                failure.original, backend, "run", f"running ModelNew{where}", module_name
            )
            raise _Stop(fields) from None
        max_error = max(max_error, verdict.max_abs_error)
        if not verdict.ok:
            fields = _fail(Status.INCORRECT, verdict.check, f"incorrect{where}: {verdict.feedback}")
            fields.update(max_abs_error=verdict.max_abs_error, flags=verdict.flags)
            raise _Stop(fields)
        del models
    return max_error


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
    model_new: type,
    device: str,
    dtype: Any,
    backend: Backend,
    module_name: str,
    phases: dict[str, float],
) -> dict[str, TimingStats]:
    spec, settings = request.spec, request.settings
    latency: dict[str, TimingStats] = {}
    for index, shape in enumerate(spec.shapes):
        where = _shape_text(shape.name, shape.params, len(spec.shapes))
        with _phase(phases, "build"):
            models = _build_models(
                ref_module, model_new, shape, settings.seed, device, dtype, backend, module_name, where
            )
            input_sets = _timing_inputs(ref_module, settings, index, device, dtype)
        try:
            with _phase(phases, "timing"):
                latency[shape.name] = _time(
                    models[1], input_sets, device, settings, platform, _race(request), _settle(settings)
                )
        except (Exception, SystemExit) as exc:
            raise _Stop(
                _exception_fields(exc, backend, "run", f"timing ModelNew{where}", module_name)
            ) from None
        del models, input_sets
    return latency


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


def _compile_only_stage(request: EvalRequest, platform: Platform, backend: Backend) -> dict[str, Any]:
    """Compile every kernel at every shape without running anything (e.g. CuTe DSL on a CPU machine)."""
    compile_only = getattr(backend, "compile_only", None)
    if compile_only is None:
        return _fail(
            Status.REJECTED_STATIC,
            "backend_not_runnable",
            f"platform {platform.name!r} can only compile backend {request.candidate.backend!r}, "
            "and that backend has no compile-only path",
        )
    from kernelevolve.backends.cute import cute_arch

    arch = cute_arch(platform.arch)
    compiled: list[str] = []
    for shape in request.spec.shapes:
        outcome = compile_only(request.candidate.source, request.spec, shape, arch=arch)
        if not outcome.ok:
            return _fail(outcome.status, outcome.error_name, f"at shape {shape.name!r}: {outcome.feedback}")
        compiled.append(f"{shape.name} ({', '.join(outcome.kernels)}, {outcome.seconds:.1f} s)")
    return _fail(
        Status.COMPILED_ONLY,
        "execution_skipped",
        f"compiled for {arch} at every shape: {'; '.join(compiled)}. Execution skipped: platform "
        f"{platform.name!r} runs backend {request.candidate.backend!r} compile-only, so correctness and "
        "timing need a GPU platform.",
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


def _build_models(
    ref_module: ModuleType,
    model_new: type,
    shape: Any,
    seed: int,
    device: str,
    dtype: Any,
    backend: Backend,
    module_name: str,
    where: str,
) -> tuple[Any, Any]:
    reference.apply_shape(ref_module, shape)
    candidate_module = sys.modules.get(model_new.__module__)
    if candidate_module is not None and candidate_module is not ref_module:
        reference.apply_shape_to_copy(vars(candidate_module), shape)

    def build_reference(on_device: bool) -> Any:
        try:
            return reference.build_model_on(
                ref_module.Model, ref_module, seed, device, dtype, on_device=on_device
            )
        except Exception as exc:
            raise ReferenceSpecError(
                f"reference Model{where} cannot be built: {type(exc).__name__}: {exc}"
            ) from exc

    def build_candidate(on_device: bool) -> Any:
        try:
            return reference.build_model_on(model_new, ref_module, seed, device, dtype, on_device=on_device)
        except (Exception, SystemExit) as exc:
            raise _Stop(
                _exception_fields(exc, backend, "run", f"building ModelNew{where}", module_name)
            ) from None

    # Both models by one route (see reference.build_model_on): on the device where both can be built
    # there, else both on the host, whose errors are the ones reported.
    on_device = reference.initialises_on_device(device)
    try:
        ref_model = build_reference(on_device)
    except ReferenceSpecError:
        if not on_device:
            raise
        on_device, ref_model = False, build_reference(False)
    try:
        new_model = build_candidate(on_device)
    except _Stop:
        if not on_device:
            raise
        new_model = build_candidate(False)  # a constructor that works on the host only...
        del ref_model
        ref_model = build_reference(False)  # ...and the reference's parameters drawn there too
    reference.perturb_constant_state(ref_model, new_model, seed)
    return ref_model, new_model


def input_maker(ref_module: ModuleType, device: str, dtype: Any) -> Callable[[int], list[Any]]:
    """seed -> correctness inputs: the one recipe, also used by the export's re-verification on load."""

    # Made on the device: the reference runs on these same tensors, so nothing needs host-side values,
    # and host RNG plus a copy for GPU-sized inputs cost seconds per evaluation.
    def make(seed: int) -> list[Any]:
        try:
            return reference.make_inputs(ref_module, seed, device, dtype, on_device=True)
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
        model = reference.build_model(ref_module.Model, ref_module, settings.seed, device, dtype)
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
        # returned can fail there (L3/32 on the H200, sweep call 49) though it compiles for real. A
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


def _exception_fields(
    exc: BaseException, backend: Backend, stage: str, doing: str, module_name: str
) -> dict[str, Any]:
    try:
        status = backend.classify_error(exc, stage)
    except Exception:
        status = Status.COMPILE_ERROR if stage == "load" else Status.RUNTIME_ERROR
    text = _traceback_text(exc, module_name)
    return _fail(status, type(exc).__name__, f"{doing} raised {type(exc).__name__}:\n{text}")


def _traceback_text(exc: BaseException, module_name: str) -> str:
    """Candidate frames plus the innermost frame, then the error itself; temp paths shown as candidate.py."""
    frames = traceback.extract_tb(exc.__traceback__)
    chosen = [f for f in frames if module_name in f.filename]
    innermost = frames[-1] if frames else None
    if innermost is not None and not innermost.filename.startswith("<frozen") and innermost not in chosen:
        chosen.append(innermost)  # where it failed, even inside torch or triton
    lines = "".join(traceback.format_list(chosen)).splitlines()[-TRACEBACK_LINES:]
    message = "".join(traceback.format_exception_only(type(exc), exc)).rstrip().splitlines()
    if len(message) > 2 * TRACEBACK_LINES:
        message = message[:TRACEBACK_LINES] + ["    ..."] + message[-TRACEBACK_LINES:]
    text = "\n".join(lines + message)
    return re.sub(r'"[^"\n]*' + re.escape(module_name) + r'\.py"', '"candidate.py"', text).replace(
        f"{module_name}.py", "candidate.py"
    )
