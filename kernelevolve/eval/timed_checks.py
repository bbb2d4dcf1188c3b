"""The judge's check of one timed call: the output a frozen runner left for its last finished call, against
the reference on that call's exact inputs and generator seed (`judged_run` decides when to check).

Split out of `judged_run` to keep each module readable.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

from kernelevolve.eval import correctness, input_refresh, timed_state
from kernelevolve.eval.argument_structure import leaves_of, rebuild_arguments
from kernelevolve.eval.module_state import COUNTERPART_RULES
from kernelevolve.types import Status


class OutputCheck:
    """The output a frozen runner left for its last finished call, against the reference on that call's
    inputs (rebuilt from the set's pristine values and the refresh plan)."""

    def __init__(
        self,
        shape: Any,  # judged_run.TimedShape
        make_set: Callable[[int], list[Any]],
        structure: list[Any],
        patterns: list[list[Any]],
        plan: list[int],
        ring: list[list[Any]],
        atol: float,
        rtol: float,
        set_count: int,
        seed: int,
    ) -> None:
        self.shape, self.make_set, self.structure = shape, make_set, structure
        self.patterns, self.plan, self.ring = patterns, plan, ring
        self.atol, self.rtol, self.set_count, self.seed = atol, rtol, set_count, seed
        self.checked: list[int] = []
        self.owner: Any = None  # the reference module whose state `state` names
        self.state: list[tuple[str, Any]] = []  # (name in `owner`, its value at the timing's start)
        self.left: timed_state.StateSlots | None = None  # what each timed call left (`keep_state`)

    def check_latest(self, finished: int) -> None:
        from kernelevolve.eval import judged_run  # (it imports this module)

        if finished <= 0:
            return
        call = finished - 1
        if call >= len(self.plan):
            raise judged_run.fail(
                Status.INCORRECT,
                "timing_inconsistent",
                f"the candidate's process claimed {finished} finished calls of {len(self.plan)}",
                flags=("timing_forged",),
            )
        self.check_call(call)

    def check_passed(self, calls: list[int], finished: int) -> None:
        """Secret calls the counter passed, each checked in its own slot where the ring still holds its
        output final (`finished` calls done; then emptied). Checking only the latest let a counter held back
        while calls went on jump past wrong calls no check saw, the counter still matching the calls
        reported made (`tests/adversarial/hacks/hold_counter_behind_honest_calls.py`)."""
        from kernelevolve.eval import timers

        # the last call whose output may still be being written: the next, or more with issue-ahead
        last_written = min(finished - 1 + timers.ISSUE_AHEAD, len(self.plan) - 1)
        for call in calls:
            if call < finished and call + len(self.ring) > last_written:  # no later call writes its slot
                self.check_call(call)
        calls.clear()

    def median_unchecked(self, samples: list[float], made: int) -> list[int]:
        """The calls whose samples make the median, where the ring still holds them, not yet checked.
        Each call is checked with one chance, so a candidate skipping its work on just over half the timed
        calls had its median forged (the skipped calls' time) whenever the draws missed them all: one run in
        eight on the CPU's six calls (`tests/adversarial/hacks/skip_most_timed_calls_forge_median.py`). A
        median below the work's time is a skipped call's own, and checking it catches every such run."""
        return [
            call
            for call in median_calls(samples, made)
            if call + len(self.ring) >= made and call not in self.checked  # no later call wrote its slot
        ]

    def checked_median(self, samples: list[float], made: int) -> float | None:
        """Where a call making the median could not be checked (a later call wrote its slot: a GPU's outputs
        past the ring's budget keep two slots), the median of the sampled calls that were checked; None where
        every median call was. A candidate skipping its work on over half the calls makes the median a
        skipped call's time, and only the per-call chance then catches it (about one run in nine escapes on a
        GPU's 20 trials); the checked calls' times are those of calls that did the work."""
        first = made - len(samples)
        if all(call in self.checked for call in median_calls(samples, made)):
            return None
        times = [samples[call - first] for call in self.checked if first <= call < made]
        return statistics.median(times) if times else None

    def check_median(self, calls: list[int]) -> None:
        """Once the timing is over: `median_unchecked`'s calls."""
        for call in calls:
            self.check_call(call, MEDIAN_NOTE)

    def check_call(self, call: int, note: str = "") -> None:
        """Call `call`'s output in its ring slot against the reference on that call's inputs; `note` says
        why this call, in a failure's feedback."""
        from kernelevolve.eval import judged_run  # (it imports this module)

        if call in self.checked:
            return
        self.checked.append(call)
        set_index = call % self.set_count
        start = leaves_of(self.make_set(set_index))  # seeded: the set's first values again, aliases kept
        leaves = input_refresh.inputs_at(start, self.set_count, set_index, call, self.plan, self.patterns)
        arguments = rebuild_arguments(self.structure, leaves)
        got = self.ring[call % len(self.ring)]
        forward_seed = input_refresh.forward_seed(self.seed, call)
        expected, after = self._reference(arguments, forward_seed)
        within, worst = correctness.within_tolerance(expected, got, self.atol, self.rtol)
        left = None if self.left is None else self.left.problem(call, after, self.atol, self.rtol)
        if within and left is None:
            return
        # A reference that differs from itself on the same seed (atomics, or state its output reads, were it
        # not put back) cannot be checked this way (one that differs only by rounding still can: no check is
        # skipped for a difference within the tolerance). One that differs by more keeps state no put-back
        # reaches (a tensor on another object, a class attribute, a global) or draws outside PyTorch's
        # generator: its timed calls cannot be checked, and passing them unchecked let a candidate do no work
        # there (`tests/adversarial/hacks/step_counter_timed_unchecked.py` before numbers were state). That is
        # a failure with its reason, never a silent skip. The state it leaves is held to the same.
        arguments = rebuild_arguments(self.structure, [t.clone() for t in leaves])
        again, after_again = self._reference(arguments, forward_seed)
        repeats, drift = correctness.within_tolerance(expected, again, self.atol, self.rtol)
        if repeats:  # its output repeats: does the state it leaves?
            repeats, drift = _states_within(after, after_again, self.atol, self.rtol)
        if not repeats:
            raise judged_run.fail(
                Status.INCORRECT,
                "reference_not_repeatable",
                f"timed call {call}{self.shape.candidate.where} could not be checked: the reference, run twice "
                f"on that call's inputs and generator seed from the same put-back state, differed from itself "
                f"in its output or the state it left ({_error_words(drift)}). It keeps state between calls that the judge "
                "cannot put back (state outside the module's buffers, parameters and plain attributes of "
                "tensors, numbers and plain lists, tuples or dicts of them) or draws random numbers outside "
                "PyTorch's generator; such a spec's timed calls cannot be checked, so no candidate is accepted "
                "on it",
                flags=("reference_not_repeatable",),
            )
        if not within:
            raise judged_run.fail(
                Status.INCORRECT,
                "timed_output_mismatch",
                f"the output of timed call {call}{self.shape.candidate.where}{note} differs from the reference "
                f"({_error_words(worst)}): outputs must be computed on every call, including timed ones",
                max_abs_error=worst if math.isfinite(worst) else None,
                flags=("timed_output_mismatch",),
            )
        what, error = left if left is not None else ("", 0.0)
        raise judged_run.fail(
            Status.INCORRECT,
            "timed_state_mismatch",
            f"after timed call {call}{self.shape.candidate.where}{note} ModelNew's state differs from the "
            f"reference's after the same call from the same start ({what}): a drop-in kernel must leave the "
            "module's state as the reference does on every call, timed ones included (running statistics, a "
            f"carried hidden state, a step counter). {COUNTERPART_RULES}",
            max_abs_error=error if math.isfinite(error) else None,
            flags=("timed_state_mismatch",),
        )

    def _reference(self, arguments: list[Any], forward_seed: int) -> tuple[Any, list[Any]]:
        """The reference's output on a call's arguments from the put-back state, with the generator seeded
        as the runner seeded it for that call (dropout's draws alike), and the state it left, copied."""
        import torch

        with torch.no_grad():
            self._restore()
            correctness.seed_forward(forward_seed)
            expected = self.shape.reference_model(*arguments)
            return expected, timed_state.after_call(self.owner, [name for name, _ in self.state])

    def keep_state(
        self, owner: Any, names: list[str], start: list[Any], arena: Any
    ) -> timed_state.StateSlots:
        """The reference's moving state (`names` of `owner`) and its values at the timing's start, copied
        here: `start` is what the runner puts ModelNew's state back to, memory the candidate can write, and a
        reference put back from it computed from whatever the candidate wrote there (NaN, so its NaN output
        matched: `tests/adversarial/hacks/stateful_reference_poisoned_start.py`). Nothing a check compares
        against is read from memory a runner maps. The state slots beside the ring's (`timed_state`) are
        made here, one per ring slot, and returned."""
        from kernelevolve.eval.module_state import copied

        self.owner = owner
        self.state = [(name, copied(value)) for name, value in zip(names, start, strict=True)]
        self.left = timed_state.StateSlots(arena, names, [value for _, value in self.state], len(self.ring))
        return self.left

    def _restore(self) -> None:
        """The reference's moving state back to the timing's start, as the runner puts ModelNew's: set by
        name, a fresh copy each time, since a call may replace the tensor rather than update it
        (`tests/adversarial/hacks/stateful_reference_reassigned_timed_unchecked.py`) and an output may be it."""
        import torch

        from kernelevolve.eval.module_state import copied, current, owner_of

        for name, value in self.state:
            held = current(self.owner, name)
            if isinstance(held, torch.nn.Parameter):  # a weight a call moves in place: moved back in place
                with torch.no_grad():
                    held.copy_(value)
                continue
            module, leaf = owner_of(self.owner, name)
            setattr(module, leaf, copied(value))


MEDIAN_NOTE = " (its time makes the reported median)"


def median_calls(samples: list[float], made: int) -> list[int]:
    """The calls whose samples make the median as `TimingStats.from_samples` takes it (the middle sample, or
    the middle two): the samples are the last `len(samples)` of the `made` calls, in order."""
    order = sorted(range(len(samples)), key=samples.__getitem__)
    mid = len(order) // 2
    middle = order[mid : mid + 1] if len(order) % 2 else order[mid - 1 : mid + 1]
    return [made - len(samples) + index for index in middle]


def _error_words(worst: float) -> str:
    """The largest error, or what the comparison saw instead where that is 0 or infinite: values left
    unwritten or not finite (an output still being written on another stream), or another shape."""
    if worst > 0 and math.isfinite(worst):
        return f"max abs error {worst:.3g}"
    return "unwritten or non-finite values, or another shape, where the reference's are finite"


def _states_within(first: list[Any], second: list[Any], atol: float, rtol: float) -> tuple[bool, float]:
    """Whether two runs of the reference left the same state (`timed_state.leaves`, within tolerance)."""
    from kernelevolve.eval.module_state import signature

    worst = 0.0
    for one, two in zip(first, second, strict=True):
        if signature(one) != signature(two):
            return False, math.inf
        ours = [timed_state.as_tensor(leaf) for leaf in timed_state.leaves(one)]
        theirs = [timed_state.as_tensor(leaf) for leaf in timed_state.leaves(two)]
        within, error = correctness.within_tolerance(ours, theirs, atol, rtol)
        if not within:
            return False, error
        worst = max(worst, error)
    return True, worst
