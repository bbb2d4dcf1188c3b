"""One candidate's run, judged from outside its process: a fresh runner computes, this process decides.

The runner (`runner.py`) imports the candidate, builds ModelNew from the constructor call and perturbed
state prepared here, and computes outputs into slots this process owns. The reference, its outputs, the
inputs' pristine copies, the comparisons and the verdict stay here. Timing runs in the runner (CUDA
events or a wall clock bound before the candidate was imported), and its outputs are checked too: every
call's output goes into a ring of slots and a completion counter advances, and at moments the runner
cannot foresee (secret call numbers, and the end) this process freezes the runner and checks the last
finished call against the reference on the exact inputs that call saw (`input_refresh`). Its reported
times must also fit inside the wall-clock span this process measured around them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelevolve.eval import (
    argument_structure,
    call_windows,
    check_schedule,
    input_refresh,
    module_state,
    tensor_guards,
    timed_checks,
    timed_guard,
    timed_state,
    timers,
)
from kernelevolve.eval.remote import RemoteCandidate, RunnerFailure, failure_fields, strict_violation
from kernelevolve.eval.runner_channel import ReplyError, finite_numbers
from kernelevolve.eval.runner_client import Runner, RunnerGone, RunnerTimeout
from kernelevolve.eval.shared_tensors import SharedArena
from kernelevolve.specs import reference
from kernelevolve.types import ShapeCase, Status, TimingStats

RING_SLOTS = 2  # > timers.ISSUE_AHEAD: the slot of the last finished call is never being written
# The ring holds every call where their outputs fit this: a secret call the counter passed is checked in
# its own slot, not only the last finished call (`timed_checks.OutputCheck.check_passed`). Past it (a
# GPU's multi-GB outputs) two slots: a runner holding its counter back can hide calls between checks.
RING_BUDGET_BYTES = {"cuda": 256 << 20, "cpu": 64 << 20}
# Device memory for distinct timing input sets (one per call where they fit; inputs are refreshed every
# call anyway): two problems' evaluations share a GPU, and KernelBench's inputs reach 8 GB.
TIMING_SET_BUDGET_BYTES = {"cuda": 1 << 30, "cpu": 64 << 20}
# A runner's timings summed may exceed the wall clock around them only by clock granularity.
SPAN_SLACK_MS = 2.0
SPAN_START_MS = 50.0  # what a timing request costs before its first call (opening the shared tensors)


class Verdict(Exception):
    """A final report's fields, from any stage."""

    def __init__(self, fields: dict[str, Any]) -> None:
        super().__init__(str(fields.get("feedback", "")))
        self.fields = fields


def fail(status: Status, error_name: str, feedback: str, **extra: Any) -> Verdict:
    return Verdict({"status": status, "error_name": error_name, "feedback": feedback, **extra})


def runner_trouble(exc: BaseException, timeout_s: float = 0.0) -> Verdict | None:
    """A runner that hung, died or sent nonsense: the candidate's fault, as a report."""
    if isinstance(exc, Verdict):
        return exc
    if isinstance(exc, RunnerFailure):
        return Verdict(exc.fields)
    if isinstance(exc, RunnerTimeout):
        detail = (
            f"\nstack when stopped:\n{exc.output}"
            if exc.output.strip()
            else "; it did not answer a stack-dump request, so it was blocked in native or GPU code "
            "(for example a kernel that never finishes)"
        )
        return fail(
            Status.TIMEOUT, "Timeout", f"evaluation exceeded the {timeout_s:g} s limit and was killed{detail}"
        )
    if isinstance(exc, RunnerGone):
        detail = f"\nlast output:\n{exc.output}" if exc.output.strip() else ""
        return fail(
            Status.WORKER_CRASH,
            exc.exit_description or "runner_died",
            f"the evaluation process died ({exc.exit_description or exc}){detail}",
        )
    if isinstance(exc, ReplyError):
        return fail(
            Status.RUNTIME_ERROR,
            "bad_runner_reply",
            f"the candidate's process answered out of protocol: {exc}",
        )
    return None


@dataclass
class TimedShape:
    """What `time_shape` needs of one shape: the reference here and the candidate's runner-side model."""

    reference_model: Any
    candidate: RemoteCandidate
    output_bytes: int = 0  # set by `time_shape`: what any kernel must write, for the roofline floor
    setup_s: float = 0.0  # set by `time_shape`: building input sets, patterns and ring before the calls
    checks_s: float = 0.0  # and checking timed calls' outputs while the runner was frozen


def time_shape(
    shape: TimedShape,
    message: dict[str, Any],
    make_set: Callable[[int], list[Any]],
    atol: float,
    rtol: float,
    seed: int,
    device: str,
    calls: int,
) -> TimingStats:
    """Time the candidate in its runner, checking its outputs at moments it cannot foresee.
    A CPU figure the outside wall clock disagrees with is re-timed once before it is judged forged: a
    busy host (CI's two cores under two test workers) can stall an honest runner's calls, while a forged
    clock disagrees every time."""
    try:
        return _time_once(shape, message, make_set, atol, rtol, seed, device, calls)
    except _WallClockMismatch as first:
        try:
            return _time_once(shape, message, make_set, atol, rtol, seed, device, calls)
        except _WallClockMismatch as second:
            raise _inconsistent(f"{second} (re-timed once: {first})") from None


class _WallClockMismatch(Exception):
    """A CPU figure the outside wall clock disagrees with (its message says how)."""


def _time_once(
    shape: TimedShape,
    message: dict[str, Any],
    make_set: Callable[[int], list[Any]],
    atol: float,
    rtol: float,
    seed: int,
    device: str,
    calls: int,
) -> TimingStats:
    import torch

    arena = shape.candidate.arena
    setup_started = time.perf_counter()
    first = make_set(0)
    with torch.no_grad():  # the output's layout, for the ring's slots; the values are not kept
        expected_like = [t.to("meta") for t in tensor_guards.tensor_leaves(shape.reference_model(*first))]
    shape.output_bytes = tensor_guards.tensor_bytes(expected_like)
    sets, structure = _timing_sets(first, make_set, arena, device, calls)
    del first
    patterns = input_refresh.make_patterns(sets[0], seed)
    plan = input_refresh.schedule(seed, calls)
    shared_patterns = [[None if p is None else _shared(arena, p) for p in row] for row in patterns]
    # A reference whose calls move its state (running statistics, an RNN's hidden state in a plain
    # attribute, a step counter, a list of tensors, a parameter: `module_state.state`) sees only the checked calls, the
    # candidate every call: where its output reads that state the two part, the check ran the reference
    # again, which differed from itself, and it was skipped (a candidate did no work on timed calls,
    # `tests/adversarial/hacks/stateful_reference_timed_unchecked`). Both sides put that state back to
    # the reference's at the timing's start before every call, so every timed call is checkable; and what
    # each call leaves behind goes into state slots beside its output (`timed_state`), compared at the checks.
    owner = getattr(shape.reference_model, "__self__", shape.reference_model)  # a training step's forward
    state = {**module_state.state(owner), **module_state.model_parameters(owner)}  # numbers, lists too
    names = [name for name in shape.candidate.stateful if name in state]
    start = [_shared_value(arena, state[name]) for name in names]
    slots_count = ring_size(shape, device, calls, timed_state.state_bytes(start))
    columns = [arena.empty_like_many(leaf, slots_count) for leaf in expected_like]  # per output leaf
    ring = [[column[k] for column in columns] for k in range(slots_count)]
    for slots in ring:
        for slot in slots:
            slot.fill_(float("nan")) if slot.is_floating_point() else slot.zero_()  # a permuted layout too
    counter = arena.host_counter()
    checker = timed_checks.OutputCheck(
        shape, make_set, structure, patterns, plan, ring, atol, rtol, len(sets), seed
    )
    left = checker.keep_state(owner, names, start, arena)  # before the runner can write `start`
    request = {
        **message,
        "op": "time",
        "index": shape.candidate.index,
        "input_sets": [[arena.ref(leaf) for leaf in leaves] for leaves in sets],
        "structure": structure,
        "patterns": [[None if p is None else arena.ref(p) for p in row] for row in shared_patterns],
        "plan": plan,
        "forward_seed": seed,  # each call's generator seed (`input_refresh.forward_seed`)
        "ring": [[arena.ref(slot) for slot in slots] for slots in ring],
        "counter": arena.ref(counter),
        "state_names": names,
        "state_values": reference.map_tensors(arena.ref, start),
        **left.request(arena),  # what each call leaves, beside its output
        "where": shape.candidate.where,
        "strict": shape.candidate.strict,  # timed calls traced as checked ones are
    }
    runner = shape.candidate.runner
    timing_plan = check_schedule.TimingPlan.of(message, device)
    secret = check_schedule.secret_calls(timing_plan, check_schedule.chooser())
    started = time.perf_counter()
    shape.setup_s = started - setup_started
    runner.send(request)
    progress: list[tuple[float, int]] = []
    pauses: list[call_windows.Span] = []
    reply, final = _supervise(runner, counter, checker, secret, shape.candidate.deadline, progress, pauses)
    paused_s = shape.checks_s = sum(pause.end_s - pause.start_s for pause in pauses)
    finished = time.perf_counter()
    span_ms = 1e3 * (finished - started)  # the runner's clock ran while it was stopped too
    where = shape.candidate.where
    if reply.get("ok") is not True:
        violation = reply.get("violation")
        if isinstance(violation, dict) and violation.get("check") in timed_guard.CHECKS:
            detail = str(violation.get("detail", ""))[:2000]
            raise fail(Status.INCORRECT, str(violation["check"]), f"timing{where}: {detail}")
        raise RunnerFailure(failure_fields(reply))
    strict_violation(reply, shape.candidate.strict, f"{where} during its timed calls")
    stats, samples = _stats(reply.get("stats"), pauses, call_windows.Span(started, finished), where)
    made = reply.get("calls")
    if not isinstance(made, int) or isinstance(made, bool) or not stats.trials <= made <= len(plan):
        raise ReplyError("the timing reply's call count is missing or out of range")
    if not timing_plan.ends_at(made, stats.trials, stats.stopped_by):  # calls or samples hidden
        raise _inconsistent(
            f"timing{where}: the candidate's process reported {made} calls made of the {len(plan)} planned "
            f"and {stats.trials} timed, stopped by {stats.stopped_by or 'no rule'}: no rule of this timing "
            "stops it there"
        )
    if final != made:  # a counter held back leaves the timed calls unchecked: it must show every call
        raise _inconsistent(
            f"timing{where}: the candidate's process reported {made} calls made and a completion counter "
            f"of {final}: the counter the judge checks timed calls by was tampered with"
        )
    shape.checks_s += _check_median(runner, checker, samples, made)
    claimed = stats.mean_ms * stats.trials
    if claimed > span_ms + SPAN_SLACK_MS:
        raise _inconsistent(
            f"timing{where}: the candidate's process reported {claimed:.3f} ms of timed calls within "
            f"{span_ms:.3f} ms of wall clock measured outside it"
        )
    observed = observed_call_ms(progress)
    stats = dataclasses.replace(stats, wall_ms=None if observed is None else round(observed, 4))
    if not device.startswith("cuda"):
        # On GPUs what lies between timed windows (the launch cover sized from the runner's own host times,
        # the L2 flush, host synchronisation) is too loosely bounded from here for this check to be fair to
        # honest kernels (experiments/adversarial_gpu); the span above and the roofline floor stand there.
        if observed is None:  # a busy host left too few readings: the span over every call, less its start
            observed = max(0.0, span_ms - 1e3 * paused_s - SPAN_START_MS) / max(1, int(counter[0]))
        if stats.median_ms * WALL_RATIO + CPU_ALLOWANCE_MS < observed:
            raise _WallClockMismatch(
                f"timing{where}: the candidate's process reported a median of {stats.median_ms:.4g} ms per "
                f"call, while calls completed every {observed:.4g} ms by the wall clock outside it"
            )
    floor = checker.checked_median(samples, made)
    if floor is not None and floor > stats.median_ms:  # the median's own calls were past checking
        stats = dataclasses.replace(stats, median_ms=floor, median_from_checked_calls=True)
    return stats


# On the CPU a call's reported time may be this much smaller than the wall-clock time between finished
# calls seen from outside, plus what the runner does between timed windows (the output copy, the input
# refresh, host jitter).
WALL_RATIO = 4.0
CPU_ALLOWANCE_MS = 0.5


def observed_call_ms(progress: list[tuple[float, int]]) -> float | None:
    """The shortest wall-clock time per finished call, from (time, calls finished) readings taken here."""
    steps = [
        (t1 - t0) * 1e3 / (c1 - c0)
        for (t0, c0), (t1, c1) in zip(progress, progress[1:], strict=False)
        if c1 > c0 > 0
    ]
    return min(steps) if steps else None  # a stall only lengthens a step: the shortest is the surest


def _inconsistent(text: str) -> Verdict:
    return fail(Status.INCORRECT, "timing_inconsistent", text, flags=("timing_forged",))


def _supervise(
    runner: Runner,
    counter: Any,
    checker: timed_checks.OutputCheck,
    secret: list[int],
    deadline: float,
    progress: list[tuple[float, int]],
    pauses: list[call_windows.Span],
) -> tuple[dict[str, Any], int]:
    """Wait for the timing reply; freeze and check the runner when its counter passes a secret call
    number, and once more when it answers (a runner that writes outputs after answering is caught).
    While it is frozen, no process it started may be alive (one could write the outputs being checked),
    and the counter may never go back (one held back or reset leaves calls unchecked).
    Every stop is added to `pauses` (the CPU's call times are taken out of them, `call_windows`).
    Returns the reply and the counter's final value."""
    pending = list(secret)
    passed: list[int] = []  # secret calls the counter passed, not yet checked in their own slots
    paused_s = 0.0  # time spent checking a frozen runner: the candidate's calls did not run then
    highest = 0
    while True:
        if runner.conn.poll(0):
            runner.pause()
            stopped = time.perf_counter()
            try:
                final = _monotone(int(counter[0]), highest)
                _no_helpers(runner)
                checker.check_latest(final)
                passed += [call for call in pending if call < final]
                checker.check_passed(passed, final)
                return _read(runner), final
            finally:
                pauses.append(call_windows.Span(stopped, time.perf_counter()))
                runner.resume()
        if time.monotonic() > deadline:
            runner.dump_stack()
            raise RunnerTimeout("timing did not finish in time", runner.output())
        if not runner.alive():
            raise runner.gone("the runner died while being timed")
        done = highest = _monotone(int(counter[0]), highest)
        if not progress or done != progress[-1][1]:
            progress.append((time.perf_counter() - paused_s, done))
        if pending and done > pending[0]:
            while pending and done > pending[0]:
                passed.append(pending.pop(0))
            frozen = time.perf_counter()
            runner.pause()
            stopped = time.perf_counter()
            try:
                highest = _monotone(int(counter[0]), highest)
                _no_helpers(runner)
                checker.check_latest(highest)
                checker.check_passed(passed, highest)
            finally:
                # A call's window loses only the time the runner surely stood still (stop seen to SIGCONT
                # sent): subtracting the signal's way there too timed fast calls at 0 ms on a busy host.
                # The wall-clock cadence above loses the whole stop, which is as lenient to honest calls.
                pauses.append(call_windows.Span(stopped, time.perf_counter()))
                runner.resume()
                paused_s += time.perf_counter() - frozen
        time.sleep(0.0002)


def _monotone(done: int, highest: int) -> int:
    """The counter's reading, which may never fall below one read before."""
    if done < highest:
        raise _inconsistent(
            f"the completion counter went back from {highest} to {done}: the counter the judge checks timed "
            "calls by was tampered with"
        )
    return done


def _no_helpers(runner: Runner) -> None:
    """Fail where a process the runner started is alive: it was not frozen with the runner, so it could
    write the outputs being checked, or do the timed calls' work outside their timed windows."""
    strays = runner.strays()
    if strays:
        raise fail(
            Status.RUNTIME_ERROR,
            "escaped_process",
            f"{len(strays)} process(es) started by the candidate were running while its timed calls were "
            "checked; a runner may not start processes",
            flags=("process_escaped",),
        )


def _read(runner: Runner) -> dict[str, Any]:
    try:
        return runner.read()
    except (EOFError, OSError):
        raise runner.gone("the runner closed its channel") from None


def _timing_sets(
    first: list[Any], make_set: Callable[[int], list[Any]], arena: SharedArena, device: str, calls: int
) -> tuple[list[list[Any]], list[Any]]:
    """Input sets' tensor leaves in the arena (as many distinct sets as the budget allows, up to one per
    call, at least one) and the arguments' structure with tensor positions marked. A set's first values
    are made again from its seed when a check needs them (`make_set`), so none are kept here."""
    structure = argument_structure.structure_of(first)
    size = max(1, tensor_guards.tensor_bytes(first))
    budget = TIMING_SET_BUDGET_BYTES["cuda" if device.startswith("cuda") else "cpu"]
    count = max(1, min(calls, budget // size))
    sets: list[list[Any]] = []
    for k in range(count):
        made = first if k == 0 else make_set(k)
        sets.append([_shared(arena, leaf) for leaf in argument_structure.leaves_of(made)])
    return sets, structure


def ring_size(shape: TimedShape, device: str, calls: int, state_bytes: int = 0) -> int:
    """Slots for a timing of `calls` calls, each an output and the state the call left (`state_bytes`):
    every call's where they fit the budget."""
    budget = RING_BUDGET_BYTES["cuda" if device.startswith("cuda") else "cpu"]
    return max(RING_SLOTS, min(calls, budget // max(1, shape.output_bytes + state_bytes)))


def _shared(arena: SharedArena, tensor: Any) -> Any:
    return tensor if arena.owns(tensor) else arena.copy_of(tensor)


def _shared_value(arena: SharedArena, value: Any) -> Any:
    """A state value with each tensor in it copied into the arena (numbers as they are)."""
    return reference.map_tensors(lambda tensor: arena.copy_of(tensor.detach()), value)


def _check_median(
    runner: Runner, checker: timed_checks.OutputCheck, samples: list[float], made: int
) -> float:
    """The calls whose times make the reported median, checked once the timing is over where the ring still
    holds them and no check has yet (`OutputCheck.median_unchecked`), the runner frozen again; returns the
    seconds it took (none where there is nothing left to check: no stop)."""
    calls = checker.median_unchecked(samples, made)
    if not calls:
        return 0.0
    started = time.perf_counter()
    runner.pause()
    try:
        _no_helpers(runner)
        checker.check_median(calls)
    finally:
        runner.resume()
    return time.perf_counter() - started


def _stats(
    data: Any, pauses: list[call_windows.Span], around: call_windows.Span, where: str
) -> tuple[TimingStats, list[float]]:
    """The runner's timing, rebuilt from checked numbers (its own summary is not trusted), and its samples.
    Wall-clock samples are the runner's call windows less the judge's own stops within them (`call_windows`)."""
    if not isinstance(data, dict):
        raise ReplyError("timing stats missing")
    samples = finite_numbers(data.get("samples_ms"), "samples_ms")
    if not samples:
        raise ReplyError("no timing samples")
    host = data.get("host_ms")
    host_samples = finite_numbers(host, "host_ms") if host else None
    method = data.get("method")
    if method not in ("cuda_event", "wall"):
        raise ReplyError("unknown timing method")
    if method == "wall":
        try:
            samples = call_windows.wall_samples(data.get("windows_s"), len(samples), pauses, around)
        except call_windows.ClockMismatch as exc:
            raise _inconsistent(f"timing{where}: {exc}") from None
    stopped_by = data.get("stopped_by", "")
    if stopped_by not in ("", timers.RACE_STOP, timers.SETTLED_STOP):
        raise ReplyError("unknown stop rule")
    stats = TimingStats.from_samples(samples, str(method), host_samples)
    return dataclasses.replace(stats, stopped_by=str(stopped_by)), samples


def build_remote(
    runner: Runner,
    arena: SharedArena,
    index: int,
    shape_params: ShapeCase,
    init: reference.InitCall,
    state: list[reference.ConstantState],
    on_device: bool,
    deadline: float,
    where: str,
    strict: bool = False,
    mode: str = "as_built",
    grads_of: list[tuple[str, list[int]]] | None = None,
) -> RemoteCandidate:
    """ModelNew for one shape, built in the runner; `grads_of`: a training step's parameters needing
    gradients, (name, shape), which ModelNew's step binds to its own (`TrainingStep.bind`)."""
    remote = RemoteCandidate(runner, index, arena, deadline, where, strict)
    message = {
        "op": "build",
        "index": index,
        "shape": shape_params,
        "init": init,
        "state": state,
        "on_device": on_device,
        "mode": mode,
        "where": where,
    }
    if grads_of is not None:
        message["grads_of"] = grads_of
    remote.request(message)
    return remote
