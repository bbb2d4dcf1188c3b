"""The checks and the timing of one candidate, once its runner has loaded it (`harness._judged_stages`).

Correctness at every shape (the reference here and ModelNew in the runner, built alike, on the same
seeded inputs; at exact fp32 too where the spec checks at PyTorch's defaults and the two differ), then
timing in the runner, checked by the judge (fresh inputs, secret checks, the roofline floor). A stage's
final verdict is a `_Stop`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernelevolve.eval import (
    correctness,
    judged_run,
    kernel_share,
    reference_outputs,
    runner_client,
    timers,
)
from kernelevolve.eval.launch_replay import COUNTED_LAUNCHES
from kernelevolve.eval.remote import RemoteCandidate, RunnerFailure
from kernelevolve.eval.shared_tensors import SharedArena
from kernelevolve.specs import precision, reference
from kernelevolve.specs.reference import ReferenceSpecError
from kernelevolve.types import (
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


class _Stop(Exception):
    """Internal: a stage produced a final report."""

    def __init__(self, report_fields: dict[str, Any]) -> None:
        super().__init__(report_fields.get("feedback", ""))
        self.fields = report_fields


def trial_seed(seed: int, shape_index: int, trial: int) -> int:
    """Distinct per (run seed, shape, trial); reference and candidate see identical inputs."""
    return (seed * 1_000_003 + shape_index * 10_007 + trial * 101 + 17) % (2**63 - 1)


@contextlib.contextmanager
def _phase(phases: dict[str, float], name: str) -> Iterator[None]:
    """Add the time spent in the block to `phases[name]`: where evaluation time goes, per report."""
    started = time.perf_counter()
    try:
        yield
    finally:
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - started


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
        # the kernel-share calls among the trials, where they can decide something (`kernel_share`)
        share = None
        if (
            request.candidate.backend == "triton"
            and spec.backward is None
            and not kernel_share.has_state(ref_model)
        ):
            extra = [trial_seed(settings.seed, index, len(seeds) + k) for k in range(4)]
            share = kernel_share.ShareCalls(
                ref_model, remote, make_inputs, seeds, extra, spec.atol, spec.rtol
            )
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
                share=share,
            )
        if verdict.stateful:
            expected.refuse()
            remote.stateful = verdict.stateful  # timed calls start from one state (`judged_run`)
        with _phase(phases, "reference"):
            _keep_reference_outputs(expected, make_inputs, seeds)
            if exact is not None and verdict.second_opinion is not None:
                _keep_reference_outputs(exact, make_inputs, seeds)
        max_error = max(max_error, verdict.max_abs_error)
        exact_flags = _exact_flags(verdict.second_opinion)
        if exact_flags:
            flags_by_shape.append(exact_flags[0])
        if not verdict.ok:
            feedback = verdict.feedback
            stochastic: tuple[str, ...] = ()
            if spec.backward is not None:
                from kernelevolve.specs.training import explained

                feedback = explained(feedback, ref_model, verdict.check, make_inputs(seeds[0]))
            elif verdict.check == "mismatch":
                trial = max(verdict.trial, 0)
                inputs = make_inputs(seeds[trial])
                if correctness.draws_in_forward(ref_model, inputs, seeds[trial], spec.atol, spec.rtol):
                    feedback += correctness.STOCHASTIC_HINT
                    stochastic = ("stochastic_reference",)
            fields = _fail(Status.INCORRECT, verdict.check, f"incorrect{where}: {feedback}")
            fields.update(max_abs_error=verdict.max_abs_error, flags=verdict.flags + exact_flags + stochastic)
            raise _Stop(fields)
        launch = COUNTED_LAUNCHES.get(request.candidate.backend)
        if launch is not None and remote.launches == 0:
            raise _Stop(
                _fail(
                    Status.INCORRECT,
                    "no_kernel_ran",
                    f"no {launch} happened in any checked call{where}: the output came from elsewhere "
                    "(a PyTorch fallback path, a cached value); the candidate's own kernels must do the work",
                )
            )
        if launch is not None:
            # the calls after the trials, and the problem a stale call among them showed; where the stale
            # and decoy calls cannot run (a training step, a reference moving its state) the call with the
            # launches left out still does: without it a token launch beside PyTorch passed there
            # (`tests/adversarial/hacks/permissive_token_launch_{training_step,stateful_reference}.py`)
            with _phase(phases, "kernel_share"):
                off_seed = trial_seed(settings.seed, index, len(seeds) + 3)
                args = (ref_model, remote, make_inputs, off_seed, spec.atol, spec.rtol)
                whole = None if verdict.stateful else share
                problem = whole.finish() if whole is not None else kernel_share.off_problem(*args)
            if problem is not None:
                raise _Stop(_fail(Status.INCORRECT, problem, kernel_share.feedback(problem, where)))
        remote.end_checks()  # timing needs neither: a multi-shape spec would hold every shape's
        pairs.append((ref_model, remote))
    return pairs, max_error, _exact_verdict(flags_by_shape)


def _exact_opinion(
    spec: KernelSpec, ref_model: Any, device: str, key: reference_outputs.TrialsKey, budget: int
) -> reference_outputs.TrialOutputs | None:
    """The reference's outputs at exact fp32, where the spec checks at PyTorch's defaults (KernelBench's
    protocol) and the two differ (cuDNN convolutions on a GPU in TF32): the verdict at the other precision,
    recorded beside the spec's and deciding nothing. The two disagree where a kernel matches one rounding and
    not the other (L1/70, experiments/adversarial_gpu session 27)."""
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
    forward_only: bool = False,
) -> dict[str, TimingStats]:
    """Every shape timed in the runner and checked here; `forward_only`: a training spec's forward pass
    alone (`TrainingStep.forward_pass` on both sides), where the default times the whole step."""
    spec, settings = request.spec, request.settings
    latency: dict[str, TimingStats] = {}
    race, settle = (None, None) if forward_only else (_race(request), _settle(settings))
    message = {
        "trials": settings.timing_trials,
        "warmup": settings.warmup_trials,
        "flush_l2": settings.flush_l2,
        "l2_bytes": platform.l2_bytes,
        "launch_cover_us": settings.launch_cover_us,
        "race": race,
        "settle": settle,
        "warmup_enough_ms": settings.warmup_enough_ms,
        **({"pass": "forward"} if forward_only else {}),
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

        timed = judged_run.TimedShape(ref_model.forward_pass if forward_only else ref_model, remote)
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
        from kernelevolve.specs.traffic import estimate_traffic

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
            runner,
            arena,
            index,
            shape,
            init,
            state,
            on_device,
            deadline,
            where,
            strict,
            mode,
            _grads_of(ref_model),
        )
    except RunnerFailure:
        if not on_device:
            raise
        del ref_model  # a constructor that works on the host only: both there
        ref_model, init, state = build_reference(False)
        remote = judged_run.build_remote(
            runner,
            arena,
            index,
            shape,
            init,
            state,
            False,
            deadline,
            where,
            strict,
            mode,
            _grads_of(ref_model),
        )
    return ref_model, remote


def _grads_of(ref_model: Any) -> list[tuple[str, list[int]]] | None:
    """A training step's parameters needing gradients, for ModelNew's step to find its counterparts."""
    wanted = getattr(ref_model, "wanted", None)
    return wanted() if callable(wanted) else None


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
            from kernelevolve.specs.input_distributions import distributed_inputs

            return distributed_inputs(made, distribution, seed)
        except ReferenceSpecError:
            raise
        except Exception as exc:
            raise ReferenceSpecError(f"reference get_inputs() failed: {type(exc).__name__}: {exc}") from exc

    return make


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


def _fail(status: Status, error_name: str, feedback: str) -> dict[str, Any]:
    return {"status": status, "error_name": error_name, "feedback": feedback}


def _shape_text(name: str, params: dict[str, Any], count: int) -> str:
    if count == 1 and not params:
        return ""
    detail = ", ".join(f"{k}={v}" for k, v in params.items())
    return f" at shape {name!r}" + (f" ({detail})" if detail else "")
