"""The baselines: the reference's eager and torch.compile timings at every shape, by the candidates' timer.

Eager, eager at exact fp32 where that differs, torch.compile (compiled unlocked on placeholders), at exact
fp32 where its output misses the tolerance, and with CUDA graphs where its time is host-bound; each
baseline's own output checked against the tolerance. A failure of an extra figure loses only that figure.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernelevolve.eval import (
    correctness,
    tensor_guards,
    timers,
)
from kernelevolve.eval.compile_baseline import compile_before_running
from kernelevolve.eval.device_memory import _device_held, _release_memory, default_device
from kernelevolve.eval.precompile import placeholder_inputs
from kernelevolve.eval.stages import trial_seed
from kernelevolve.specs import precision, reference
from kernelevolve.specs.reference import ReferenceSpecError
from kernelevolve.types import (
    Baseline,
    EvalSettings,
    KernelSpec,
    TimingStats,
)

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform

log = logging.getLogger(__name__)


TIMING_INPUT_SETS = 3  # when inputs are slow to make, timed calls rotate through this many sets


FRESH_INPUTS_BUDGET_S = 20.0  # most time spent making fresh inputs for the timed calls of one shape


_MAX_ROTATED_INPUT_BYTES = 4 << 30


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
    size = sum(t.numel() * t.element_size() for t in tensor_guards._tensor_leaves(first))
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


def measure_baselines(
    spec: KernelSpec, platform: Platform, settings: EvalSettings, device: str | None = None
) -> dict[str, Baseline]:
    """Eager and torch.compile (default mode) timings of the reference at every shape, same timer."""

    from kernelevolve.specs.training import judged_source

    device = device or default_device(platform)
    timers.bind_clocks()
    ref_module = reference.load_reference(judged_source(spec))  # a training spec's: forward + backward
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
        _pay_the_forward_probe(model)
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


def _pay_the_forward_probe(model: Any) -> None:
    """A training step's baselines pay the gather a candidate's step pays between its passes
    (`forward_probe`), eager and compiled alike (the probe runs in the step, outside the compiled model):
    left out, every candidate's step would carry a cost its baselines do not."""
    from kernelevolve.eval.forward_probe import ForwardProbe
    from kernelevolve.specs.training import TrainingStep

    if isinstance(model, TrainingStep):
        model.probe = ForwardProbe()


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

    if callable(getattr(model, "compiled", None)):  # a training step: the model compiled, its backward too
        return run_and_time(model.compiled({"triton.cudagraphs": True} if cuda_graphs else None))
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
                self.expected: Any = model(*tensor_guards.clone_tree(inputs))
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
                got = model(*tensor_guards.clone_tree(self.inputs))
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
