"""The judge's check of one timed call: the output a frozen runner left for its last finished call, against
the reference on that call's exact inputs and generator seed (`judged_run` decides when to check).

Split out of `judged_run` to keep each module readable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kernelevolve.eval import correctness, input_refresh
from kernelevolve.eval.argument_structure import leaves_of, rebuild_arguments
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

    def check_call(self, call: int) -> None:
        """Call `call`'s output in its ring slot against the reference on that call's inputs."""
        from kernelevolve.eval import judged_run  # (it imports this module)

        if call in self.checked:
            return
        self.checked.append(call)
        import torch

        set_index = call % self.set_count
        start = leaves_of(self.make_set(set_index))  # seeded: the set's first values again, aliases kept
        leaves = input_refresh.inputs_at(start, self.set_count, set_index, call, self.plan, self.patterns)
        arguments = rebuild_arguments(self.structure, leaves)
        got = self.ring[call % len(self.ring)]
        forward_seed = input_refresh.forward_seed(self.seed, call)
        with torch.no_grad():  # the generator as the runner seeded it for this call: dropout's draws alike
            self._restore()
            correctness.seed_forward(forward_seed)
            expected = self.shape.reference_model(*arguments)
        within, worst = correctness.within_tolerance(expected, got, self.atol, self.rtol)
        if within:
            return
        with torch.no_grad():  # a reference that differs from itself on the same seed (atomics, or state
            self._restore()  # its output reads, were it not put back) cannot be checked this way
            correctness.seed_forward(forward_seed)
            again = self.shape.reference_model(
                *rebuild_arguments(self.structure, [t.clone() for t in leaves])
            )
        # (one that differs from itself only by rounding still can: no check is skipped for a difference
        # within the tolerance)
        if not correctness.within_tolerance(expected, again, self.atol, self.rtol)[0]:
            return
        raise judged_run.fail(
            Status.INCORRECT,
            "timed_output_mismatch",
            f"the output of timed call {call}{self.shape.candidate.where} differs from the reference "
            f"({_error_words(worst)}): outputs must be computed on every call, including timed ones",
            max_abs_error=worst if math.isfinite(worst) else None,
            flags=("timed_output_mismatch",),
        )

    def keep_state(self, owner: Any, names: list[str], start: list[Any]) -> None:
        """The reference's moving state (`names` of `owner`) and its values at the timing's start, copied
        here: `start` is what the runner puts ModelNew's state back to, memory the candidate can write, and a
        reference put back from it computed from whatever the candidate wrote there (NaN, so its NaN output
        matched: `tests/adversarial/hacks/stateful_reference_poisoned_start.py`). Nothing a check compares
        against is read from memory a runner maps."""
        self.owner = owner
        self.state = [(name, value.detach().clone()) for name, value in zip(names, start, strict=True)]

    def _restore(self) -> None:
        """The reference's moving state back to the timing's start, as the runner puts ModelNew's: set by
        name, a fresh copy each time, since a call may replace the tensor rather than update it
        (`tests/adversarial/hacks/stateful_reference_reassigned_timed_unchecked.py`) and an output may be it."""
        for name, value in self.state:
            *path, leaf = name.split(".")
            module = self.owner.get_submodule(".".join(path)) if path else self.owner
            setattr(module, leaf, value.clone())


def _error_words(worst: float) -> str:
    """The largest error, or what the comparison saw instead where that is 0 or infinite: values left
    unwritten or not finite (an output still being written on another stream), or another shape."""
    if worst > 0 and math.isfinite(worst):
        return f"max abs error {worst:.3g}"
    return "unwritten or non-finite values, or another shape, where the reference's are finite"
