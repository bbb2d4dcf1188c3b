"""Correctness of a candidate against the reference over several fresh seeded input sets.

Each trial: the reference runs on its own copy of the inputs; the candidate runs on inputs placed
inside guard bands (NaN bytes before and after each tensor, so reads past an input's end poison
the result and writes past it are seen) with the allocator poisoned (freed NaN blocks and
NaN-filled `torch.empty`, so outputs written only in part show up as non-finite). Its output must
match the reference's structure, shape, dtype and values, must not alias an input, and the inputs
must come back unchanged. Candidate exceptions come out wrapped in `CandidateFailure`.

The guard bands and poisoning are `tensor_guards.py`, the chunked value comparison `value_scan.py`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kernelevolve.eval import module_state
from kernelevolve.eval.tensor_guards import (
    _guards_intact,
    _is_tensor,
    _layout,
    _tensor_leaves,
    clone_tree,
    guard_inputs,
    poison_allocator,
    synchronize_current_stream,
)
from kernelevolve.eval.value_scan import _value_problem, values_within
from kernelevolve.specs.reference import ReferenceSpecError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)


class CandidateFailure(Exception):
    """The candidate raised while being called; `original` is its exception, traceback intact."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(f"{type(original).__name__}: {original}")
        self.original = original


@dataclass(frozen=True)
class CorrectnessVerdict:
    ok: bool
    check: str = ""  # failed check: output_type, shape, dtype, device, aliasing, input_mutated, guard_band, nonfinite, mismatch
    feedback: str = ""
    max_abs_error: float = 0.0
    trial: int = -1
    flags: tuple[str, ...] = ()
    stateful: tuple[str, ...] = ()  # the reference's buffers its calls changed (running statistics)
    # Against `check_correctness`'s second reference (the same inputs, another precision) on the trials run:
    # (every output within tolerance, max abs error); None where there was none
    second_opinion: tuple[bool, float] | None = None


_CHECK_FLAGS = {
    "input_mutated": "input_mutated",
    "guard_band": "guard_band",
    "aliasing": "output_aliases_input",
}


def seed_forward(seed: int) -> None:
    """Seed the generator right before a model's forward, alike for every model compared in a trial, as
    KernelBench's own check does: a reference drawing random tensors in forward (L3/35's initial LSTM
    states) can then be matched. Not the inputs' seed, so forward's draws do not repeat the inputs."""
    import torch

    torch.manual_seed((seed * 1_000_003 + 17) % (2**63))


# (trial, seed, inputs) -> the reference's output on that trial; it must not change `inputs`
ExpectedFor = Callable[[int, int, list[Any]], Any]


class RemoteCall(Protocol):
    """A candidate in another process: `call` runs one forward there on judge-owned inputs."""

    arena: Any
    checked_inputs: list[Any] | None  # the guarded inputs of its last checked call

    def call(self, inputs: list[Any], expected: Any, seed: int, launches: str | None = None) -> Any: ...

    def state(self, names: list[str], like: list[Any]) -> list[Any | None]: ...


class TrialCalls(Protocol):
    """Calls a check makes among its trials (`kernel_share.ShareCalls`)."""

    def mode(self, trial: int) -> str | None:
        """The launch mode of the trial's runner call ("record", "decoy"; None: as built)."""
        ...

    def after(self, trial: int, stateful: bool) -> None:
        """The trial passed (`stateful`: the reference's calls have changed its state so far)."""
        ...


def run_reference(reference: Callable[..., Any]) -> ExpectedFor:
    """The reference run on a copy of the trial's inputs, its random draws seeded as the candidate's."""

    def expected(trial: int, seed: int, inputs: list[Any]) -> Any:
        import torch

        with torch.no_grad():
            seed_forward(seed)
            return reference(*clone_tree(inputs))

    return expected


def check_correctness(
    reference: Callable[..., Any],
    candidate: Callable[..., Any],
    make_inputs: Callable[[int], list[Any]],
    seeds: Sequence[int],
    atol: float,
    rtol: float,
    expected_for: ExpectedFor | None = None,
    remote: RemoteCall | None = None,
    second_opinion: ExpectedFor | None = None,
    share: TrialCalls | None = None,
) -> CorrectnessVerdict:
    """Run `candidate` once per seed (same instance, so carried state is exercised) and compare.
    `expected_for` gives the reference's outputs (default: `reference` run on each trial, in order).
    With `remote`, the candidate runs in a runner process (`kernelevolve.eval.remote`): inputs are
    placed in memory it maps, and what comes back is read from judge-owned slots. `second_opinion`, another
    reference's outputs for the same trials (another precision), is compared too and decides nothing: its
    result is the verdict's `second_opinion` (none where the reference changes its own state).
    `share` (with `remote`): each trial's launch mode, and calls made after a trial passed (`kernel_share`:
    a trial recorded, the last ones run as decoys, the stale call among them)."""
    import torch

    expected_of = expected_for or run_reference(reference)
    worst = 0.0
    second: list[tuple[bool, float]] = []
    guarded: list[Any] | None = None
    guards: list[Any] = []
    stateful: list[str] = []  # the reference's buffers its calls change: the candidate must change them too
    for trial, seed in enumerate(seeds):
        inputs = make_inputs(seed)
        # (kept outputs mean no reference run and no change seen: only a stateless reference's are kept)
        before = module_state.snapshot(reference)
        try:
            expected = expected_of(trial, seed, inputs)
        except Exception as exc:
            raise ReferenceSpecError(
                f"reference Model failed on seed {seed}: {type(exc).__name__}: {exc}"
            ) from exc
        stateful += [name for name in module_state.changed(reference, before) if name not in stateful]
        del before
        # A runner gets copies (`guard_inputs`) and cannot reach these (another process; on a GPU the arena's
        # own memory pool), so they are the pristine values; a candidate run here could write them.
        pristine = inputs if remote is not None else clone_tree(inputs)
        guarded, guards, fresh = into_guarded(
            guarded, guards, inputs, remote.arena if remote is not None else None
        )
        if fresh and remote is not None:
            remote.checked_inputs = guarded  # for the kernel-share calls among and after the trials
        try:
            if remote is not None:
                got = remote.call(guarded, expected, seed, share.mode(trial) if share is not None else None)
            else:
                poison_allocator(_tensor_leaves(expected))
                with torch.no_grad():
                    seed_forward(seed)  # random draws in forward match the reference's
                    got = candidate(*guarded)
                # Surface faults of the candidate's kernels (illegal address, device assert) here, as
                # the candidate's. Only the current stream: work left running on a side stream is
                # still poison when the comparisons below (queued on this stream) look at it.
                synchronize_current_stream(_tensor_leaves(got) + _tensor_leaves(guarded))
        except (Exception, SystemExit) as exc:
            raise CandidateFailure(exc) from exc
        problem, check, error = _compare_trial(expected, got, guarded, pristine, guards, atol, rtol)
        if second_opinion is not None and not stateful:
            second.append(within_tolerance(second_opinion(trial, seed, inputs), got, atol, rtol))
        if not problem and stateful:
            try:
                problem, check, error = _state_problem(reference, candidate, remote, stateful, atol, rtol)
            except (Exception, SystemExit) as exc:
                raise CandidateFailure(exc) from exc
        worst = max(worst, error)
        if problem:
            prefix = f"trial {trial + 1}/{len(seeds)} (seed {seed}): " if len(seeds) > 1 else ""
            flag = _CHECK_FLAGS.get(check)
            flags = (flag,) if flag else ()
            return CorrectnessVerdict(
                False,
                check,
                prefix + problem,
                worst,
                trial,
                flags,
                tuple(stateful),
                _summed(second, stateful),
            )
        del inputs, pristine, expected, got  # before the next trial's are made: multi-GB inputs double up
        if share is not None:
            share.after(trial, bool(stateful))
    return CorrectnessVerdict(
        True, max_abs_error=worst, stateful=tuple(stateful), second_opinion=_summed(second, stateful)
    )


def into_guarded(
    guarded: list[Any] | None, guards: list[Any], inputs: list[Any], arena: Any
) -> tuple[list[Any], list[Any], bool]:
    """`inputs` as a checked call takes them: written into the guarded copies an earlier call used where
    their layout is the same (same storage, new values: a result cache keyed by data_ptr() returns stale
    data), else fresh guarded copies. Returns the copies, their guard bands and whether they are fresh."""
    if guarded is not None and _layout(guarded) == _layout(inputs):
        for target, value in zip(_tensor_leaves(guarded), _tensor_leaves(inputs), strict=True):
            target.copy_(value)
        return guarded, guards, False
    fresh, bands = guard_inputs(inputs, arena)
    return fresh, bands, True


def _summed(second: list[tuple[bool, float]], stateful: list[str]) -> tuple[bool, float] | None:
    if not second or stateful:
        return None
    return all(ok for ok, _ in second), max(error for _, error in second)


def _state_problem(
    reference: Any, candidate: Any, remote: RemoteCall | None, names: list[str], atol: float, rtol: float
) -> tuple[str, str, float]:
    """The candidate's counterparts of the reference's changed buffers, against them (`module_state`). State
    in plain attributes is put back before timed calls but not compared here: a kernel may hold what the
    reference keeps there (KernelBench's LSTMs' `self.c0 = self.h0.to(...)`) its own way."""
    ours = module_state.floating_buffers(reference)
    names = [name for name in names if name in ours]
    if not names:
        return "", "", 0.0
    like = [ours[name] for name in names]
    if remote is not None:
        theirs = remote.state(names, like)
    else:
        wanted = [(name, tuple(tensor.shape)) for name, tensor in zip(names, like, strict=True)]
        theirs = module_state.counterparts(candidate, wanted) if hasattr(candidate, "named_buffers") else []
        theirs += [None] * (len(names) - len(theirs))
    for name, ref, got in zip(names, like, theirs, strict=True):
        if got is None:
            return (
                f"the reference updates its buffer {name!r} {tuple(ref.shape)} when called, and ModelNew has "
                "no buffer of that shape: a drop-in kernel must leave the module's state as the reference does "
                f"(running statistics in training mode). {module_state.COUNTERPART_RULES}",
                "state_mismatch",
                0.0,
            )
        within, worst = within_tolerance(ref, got, atol, rtol)
        if not within:
            return (
                f"after the call ModelNew's counterpart of the reference's buffer {name!r} differs from it (max "
                f"abs error {worst:.3g}): a drop-in kernel must update the module's state as the reference "
                f"does (running statistics in training mode). {module_state.COUNTERPART_RULES}",
                "state_mismatch",
                worst if math.isfinite(worst) else 0.0,
            )
    return "", "", 0.0


STOCHASTIC_HINT = (
    " The reference draws random numbers in forward (its output changes with the generator's seed, e.g. "
    "dropout in training mode). The judge seeds PyTorch's generator alike before both forwards, so only the "
    "same draws from PyTorch's generator, in the same order (the module's own dropout), can match it; "
    "a kernel's own random numbers (tl.rand) cannot."
)


def draws_in_forward(reference: Any, inputs: list[Any], seed: int, atol: float, rtol: float) -> bool:
    """Whether the reference's output depends on the generator's seed in forward: alike on one seed twice,
    unlike on another. Its buffers (running statistics) are put back after each call; no copy of the model
    is made (KernelBench's largest weights are gigabytes)."""
    import torch

    buffers = dict(reference.named_buffers()) if hasattr(reference, "named_buffers") else {}
    kept = {name: buffer.detach().clone() for name, buffer in buffers.items()}

    def run(forward_seed: int) -> Any:
        seed_forward(forward_seed)
        try:
            return reference(*clone_tree(inputs))
        finally:
            for name, value in kept.items():
                buffers[name].copy_(value)

    try:
        with torch.no_grad():
            first = run(seed)  # at most two outputs held at once: KernelBench's can be gigabytes
            if not within_tolerance(first, run(seed), atol, rtol)[0]:
                return False  # it varies on one seed (atomics, say): not the generator's doing
            return not within_tolerance(first, run(seed + 1), atol, rtol)[0]
    except Exception:
        return False  # no hint where the probe cannot run; the verdict stands as it is


def within_tolerance(expected: Any, got: Any, atol: float, rtol: float) -> tuple[bool, float]:
    """Does `got` match `expected` (same tensors, shapes, values within atol + rtol * |expected|), and the
    largest absolute error: the value check a candidate gets, without its guards and poison."""
    ours, theirs = _tensor_leaves(expected), _tensor_leaves(got)
    if len(ours) != len(theirs) or any(a.shape != b.shape for a, b in zip(ours, theirs, strict=True)):
        return False, math.inf
    close, worst = True, 0.0
    for ref, out in zip(ours, theirs, strict=True):
        within, error = values_within(ref, out, atol, rtol)
        worst = max(worst, error)
        close &= within
    return close, worst


def _compare_trial(
    expected: Any,
    got: Any,
    inputs: list[Any],
    pristine: list[Any],
    guards: list[Any],
    atol: float,
    rtol: float,
) -> tuple[str, str, float]:
    """(problem text, check name, max abs error); empty problem when the trial passed."""
    expected_leaves = _leaves(expected, "output")
    got_leaves = _leaves(got, "output")
    structure = _structure_problem(expected_leaves, got_leaves)
    if structure:
        return structure, "output_type", 0.0
    for (path, ref), (_, out) in zip(expected_leaves, got_leaves, strict=True):
        problem, check = _meta_problem(path, ref, out)
        if problem:
            return problem, check, 0.0
    alias = _alias_problem(got_leaves, inputs)
    if alias:
        return alias, "aliasing", 0.0
    mutated = _mutation_problem(inputs, pristine)
    if mutated:
        return mutated, "input_mutated", 0.0
    for index, buffer in enumerate(guards):
        if buffer is not None and not _guards_intact(buffer):
            return f"memory just outside input {index} was written (out-of-bounds store)", "guard_band", 0.0
    worst = 0.0
    for (path, ref), (_, out) in zip(expected_leaves, got_leaves, strict=True):
        problem, check, error = _value_problem(path, ref, out, atol, rtol)
        worst = max(worst, error)
        if problem:
            return problem, check, worst
    return "", "", worst


# ---------------------------------------------------------------------------------------------
# Structure and metadata


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, (list, tuple)):
        # A named tuple (torch.max's torch.return_types.max) is its items, in order: the runner's reply
        # carries tuples as tuples, and a plain tuple of the same items is the same values.
        out: list[tuple[str, Any]] = [(path, tuple if isinstance(value, tuple) else list)]
        for i, item in enumerate(value):
            out.extend(_leaves(item, f"{path}[{i}]"))
        return out
    return [(path, value)]


def _describe(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"{type(value).__name__} of shape {tuple(value.shape)}"
    if isinstance(value, type):
        return value.__name__
    return type(value).__name__


def _structure_problem(expected: list[tuple[str, Any]], got: list[tuple[str, Any]]) -> str:
    import torch

    for (path, ref), (got_path, out) in zip(expected, got, strict=False):
        if path != got_path:
            break
        if isinstance(ref, type):  # a list/tuple container: kinds must agree
            if not isinstance(out, type):
                return f"{path}: expected a {ref.__name__}, got {_describe(out)}"
            continue
        if isinstance(ref, torch.Tensor):
            if type(out) is not torch.Tensor:
                return f"{path}: expected a torch.Tensor, got {_describe(out)}"
        elif isinstance(out, (torch.Tensor, type)):
            return f"{path}: expected {type(ref).__name__} {ref!r}, got {_describe(out)}"
    if len(expected) != len(got) or any(p != q for (p, _), (q, _) in zip(expected, got, strict=False)):
        want = ", ".join(f"{p}: {_describe(v)}" for p, v in expected[:6])
        have = ", ".join(f"{p}: {_describe(v)}" for p, v in got[:6])
        return f"output structure differs from the reference: expected [{want}], got [{have}]"
    return ""


def _meta_problem(path: str, ref: Any, out: Any) -> tuple[str, str]:
    import torch

    if not isinstance(ref, torch.Tensor):
        return "", ""
    if tuple(out.shape) != tuple(ref.shape):
        return f"{path}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}", "shape"
    if out.dtype != ref.dtype:
        return f"{path}: dtype {out.dtype} != reference {ref.dtype}", "dtype"
    if out.device != ref.device:
        return f"{path}: on device {out.device}, the reference output is on {ref.device}", "device"
    return "", ""


def _storage_range(tensor: torch.Tensor) -> tuple[int, int]:
    storage = tensor.untyped_storage()
    start = storage.data_ptr()
    return start, start + storage.nbytes()


def _alias_problem(outputs: list[tuple[str, Any]], inputs: list[Any]) -> str:
    input_ranges = [(i, _storage_range(t)) for i, t in enumerate(_tensor_leaves(inputs)) if t.numel()]
    for path, out in outputs:
        if not _is_tensor(out) or out.numel() == 0:
            continue
        start, end = _storage_range(out)
        for index, (in_start, in_end) in input_ranges:
            if start < in_end and in_start < end:
                return f"{path} shares memory with input {index}; return a new tensor, do not alias inputs"
    return ""


def _mutation_problem(inputs: list[Any], pristine: list[Any]) -> str:
    """An input whose bytes differ from its copy taken before the call: bit for bit, so a NaN rewritten
    with another payload or a 0.0 turned into -0.0 counts too, in one pass over each input."""
    import torch

    for index, (now, before) in enumerate(zip(_tensor_leaves(inputs), _tensor_leaves(pristine), strict=True)):
        now_bits, before_bits = _bits(now), _bits(before)
        if not torch.equal(now_bits, before_bits):
            changed = int((now_bits != before_bits).sum())
            return (
                f"input {index} was modified in place ({changed} of {now.numel()} elements changed); "
                "kernels must not write to their inputs"
            )
    return ""


_BITS_OF_SIZE = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's elements as integers of the same width (a view where it is contiguous)."""
    import torch

    if tensor.is_complex():
        tensor = torch.view_as_real(tensor)
    return tensor.contiguous().view(getattr(torch, _BITS_OF_SIZE[tensor.element_size()]))
