"""Do the candidate's own kernels do a part of the work? Calls with their launches left out or replayed.

Counting launches (`no_kernel_ran`) shows that a kernel ran, not that the output needed it. So the judge
changes how the runner treats the launches (`launch_replay`) in some of a shape's calls:

- "record": the trial before the last two (T3 of five; the first where fewer than three run) is
  recorded: what each launch changed, and to which values.
- "stale", on fresh inputs: every launch runs, then the elements it changed in the recorded trial are
  overwritten with that trial's values. Still right: what the kernels changed does not depend on the
  inputs, a flag the output is multiplied by or values rewritten unchanged
  (`kernel_work_input_independent`, `permissive_flag_dependent_output.py`). Inconclusive where the two
  inputs' reference outputs agree and where the recorded trial replayed a CUDA graph.
- "decoy" (two): like "stale" without writing back; their outputs must be right. They are the last two
  trials, so a shape's calls are T1 T2 T3(record), then T4, T5 and the stale call with the stale one at
  a secret place (before T4, between, after T5), then "off": a candidate returning garbage where it
  guesses a check fails a trial (`permissive_flag_garbage_after_checks.py`). The decoys used to be two
  more checked calls on fresh inputs after the trials, correctness trials in all but name; as trials
  they save two runner calls per shape (30-50 ms each under the device lock on a multi-GB problem).
  Where fewer than three trials run, pure decoy calls after the trials make up the two
  (`kernel_share_decoy_wrong` where one is wrong).
- "off", after the trials on fresh inputs: every Triton launch (and CUDA graph replay) a no-op. The
  runner poisons its allocator before each call, so a kernel's output left unwritten holds poison. Still
  right: the kernels contributed nothing (`kernel_work_redundant`, `permissive_token_launch.py`). A
  candidate can tell this call (its kernels' writes are missing), so it comes last.

Where an input's shape is drawn per seed (a jagged batch: its row count), an honest kernel's launches on
a fresh seed's inputs would find no recorded launch of their layout to be replaced by, and keep their own
values: there the stale call takes the record's inputs with their floating values changed
(`input_refresh`'s mantissa flips). Its layout would then tell it from the trials around it, so where the
stale seed's layout, or any trial's before it, is not the record's, the stale call goes after the trials
with two pure decoys made the same way, in a secret order (`permissive_jagged_lengths_copy.py`).
No record, stale or decoy call where the reference holds parameters or buffers (honest kernels may compute
from those alone, the same in both calls): only "off".

This shows the kernels compute something from the inputs that the output needs, not how large a share it
is: a token kernel copying one input element that the output is made to depend on passes
(`permissive_token_input_dependent.py`), and so does a kernel writing one element PyTorch left out. No
check of dependence can tell those from an honest small kernel (a cuBLAS matmul and a Triton epilogue).
The calls are the runner's word like every run-time check; the static checks stand in front.
The record, stale and decoy calls are skipped where the spec has a backward, and from the first trial
showing that the reference changes its own state (running statistics): a further reference call among the
trials would move the state the candidate's is compared with. The "off" call runs there too, after the
trials, where no state is compared (timed calls start from the reference's state, put back on both
sides): without it a token launch beside PyTorch passed a training step or BatchNorm in training mode
(`permissive_token_launch_training_step.py`, `permissive_token_launch_stateful_reference.py`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelevolve.eval import correctness, input_refresh
from kernelevolve.eval.launch_replay import DECOY, RECORD, STALE
from kernelevolve.eval.remote import RemoteCandidate, RunnerFailure
from kernelevolve.eval.runner_channel import ReplyError

OFF = "off"
REDUNDANT = "kernel_work_redundant"
INPUT_INDEPENDENT = "kernel_work_input_independent"
DECOY_WRONG = "kernel_share_decoy_wrong"
DECOYS = 2  # decoy-mode calls beside the stale one
_FEEDBACK = {
    REDUNDANT: "the output was right with every Triton launch left out{where}: the candidate's own kernels "
    "did none of the work (PyTorch computed it); they must compute the output, or a part of it",
    INPUT_INDEPENDENT: "the output was right with every Triton launch's writes replaced by those of a call on "
    "other inputs{where}: what the candidate's kernels compute does not depend on the inputs (a flag, a "
    "constant, values rewritten unchanged; PyTorch computed the output); they must compute the output, "
    "or a part of it",
    DECOY_WRONG: "a checked call after the correctness trials{where} gave a wrong output",
}


def feedback(problem: str, where: str) -> str:
    return _FEEDBACK[problem].format(where=where)


@dataclass(frozen=True)
class Plan:
    """Where a shape's kernel-share calls go among its `trials` correctness trials: the last
    `decoy_trials` run as decoys, the one before them is recorded, and `extra_decoys` pure decoy calls
    follow the trials; the stale call comes after `stale_slot` of the decoy-mode calls (0 to DECOYS)."""

    trials: int
    stale_slot: int

    @property
    def decoy_trials(self) -> int:
        return min(DECOYS, self.trials - 1)

    @property
    def extra_decoys(self) -> int:
        return DECOYS - self.decoy_trials

    @property
    def record(self) -> int:
        return self.trials - 1 - self.decoy_trials

    def mode(self, trial: int) -> str | None:
        """The launch mode of `trial`'s runner call."""
        if trial < self.record:
            return None
        return RECORD if trial == self.record else DECOY

    def stale_after_trial(self) -> int | None:
        """The trial the stale call follows, or None where it comes after the trials."""
        return self.record + self.stale_slot if self.stale_slot <= self.decoy_trials else None


def plan(trials: int) -> Plan:
    # secret: the stale call is one of three decoy-mode calls alike
    return Plan(trials, random.SystemRandom().randrange(DECOYS + 1))


class ShareCalls:
    """A shape's kernel-share calls around its correctness trials (`check_correctness`'s `share`): the
    trials' launch modes and the stale call among them (`after`), then the calls left (`finish`).
    `seeds`: four fresh seeds, the stale call's, two pure decoys' and the "off" call's."""

    def __init__(
        self,
        reference: Any,
        remote: RemoteCandidate,
        make_inputs: Callable[[int], list[Any]],
        trial_seeds: list[int],
        seeds: list[int],
        atol: float,
        rtol: float,
    ) -> None:
        self.reference, self.remote, self.make_inputs = reference, remote, make_inputs
        self.plan = plan(len(trial_seeds))
        self.record_seed = trial_seeds[self.plan.record]
        self.stale_seed, self.decoy_seeds, self.off_seed = seeds[0], seeds[1:3], seeds[3]
        self.atol, self.rtol = atol, rtol
        self.layouts: list[Any] = []  # each passed trial's input layout, in order
        self.stale_done = False
        self.put_off = False  # the stale call goes after the trials among record-shaped decoys (jagged)
        self.problem: str | None = None  # the stale call's, until `finish` reports it
        self._drawn: tuple[int, list[Any]] | None = None

    def mode(self, trial: int) -> str | None:
        return self.plan.mode(trial)

    def after(self, trial: int, stateful: bool) -> None:
        """`trial` passed: make the stale call where its place is right after it. Not where a reference
        call has changed the reference's state (a further one would move what the candidate's is checked
        against; the stage skips the rest)."""
        self.layouts.append(_layout(self.remote.checked_inputs or []))
        if trial != self.plan.stale_after_trial() or stateful:
            return
        inputs = self._draw(self.stale_seed)
        if self._fits(inputs):
            self._stale(inputs)
        else:
            self.put_off, self._drawn = True, None
            inputs.clear()

    def finish(self) -> str | None:
        """After every trial passed: the calls left, and the first of INPUT_INDEPENDENT, DECOY_WRONG,
        REDUNDANT they (or the stale call among the trials) show, or None."""
        if self.problem is not None:
            return self.problem
        if not self.stale_done and not self.put_off:
            self.put_off = not self._fits(self._draw(self.stale_seed))
        if self.put_off:
            modes = [DECOY] * DECOYS + [STALE]
            random.SystemRandom().shuffle(modes)  # secret: the stale call is one of three alike
        else:
            modes = [DECOY] * self.plan.extra_decoys
            if not self.stale_done:
                modes.insert(self.plan.stale_slot - self.plan.decoy_trials, STALE)
        decoy_seeds = iter(self.decoy_seeds)
        for mode in modes:
            seed = self.stale_seed if mode == STALE else next(decoy_seeds)
            inputs = self._record_shaped_unless_alike(self._draw(seed), seed)
            problem = self._stale(inputs) if mode == STALE else self._decoy(inputs, seed)
            if problem is not None:
                return problem
        self._drawn = None
        return off_problem(self.reference, self.remote, self.make_inputs, self.off_seed, self.atol, self.rtol)

    def _fits(self, inputs: list[Any]) -> bool:
        """Whether the stale call can take its own inputs among the trials: they and every trial's so far
        share the record's layout. Else the layout changes with the seed, and the stale call must take the
        record's (see the module docstring)."""
        return all(layout == _layout(inputs) for layout in self.layouts)

    def _draw(self, seed: int) -> list[Any]:
        """`seed`'s inputs; those drawn to decide where the stale call goes are used for it rather than
        drawn again, and let go of before any other set is drawn (one multi-GB input set at a time)."""
        drawn, self._drawn = self._drawn, None
        if drawn is not None and drawn[0] == seed:
            return drawn[1]
        del drawn
        inputs = self.make_inputs(seed)
        if seed == self.stale_seed:
            self._drawn = (seed, inputs)
        return inputs

    def _record_shaped_unless_alike(self, inputs: list[Any], seed: int) -> list[Any]:
        if _layout(inputs) == self.layouts[self.plan.record]:
            return inputs
        inputs.clear()
        return _record_shaped(self.make_inputs(self.record_seed), seed)

    def _decoy(self, inputs: list[Any], seed: int) -> str | None:
        expected = correctness.run_reference(self.reference)(0, seed, inputs)
        right = _right(self.remote, inputs, expected, seed, DECOY, self.atol, self.rtol)
        inputs.clear()
        return None if right else DECOY_WRONG

    def _stale(self, inputs: list[Any]) -> str | None:
        """The stale call, judged at once so its inputs and outputs are let go of before the next call's
        are made; its problem is kept for `finish` (a failed trial after it is reported first)."""
        self._drawn, self.stale_done = None, True
        seed = self.stale_seed
        expected = correctness.run_reference(self.reference)(0, seed, inputs)
        right = _right(self.remote, inputs, expected, seed, STALE, self.atol, self.rtol)
        inputs.clear()  # the caller's list too: a multi-GB problem holds one input set at a time
        # (inputs whose reference outputs agree cannot show that the kernels' work depends on them; the
        # record's output is made only for a right stale call, which an honest kernel never gives)
        record = (self.reference, self.make_inputs, self.record_seed, expected, self.atol, self.rtol)
        if right and not self.remote.replay_opaque and not _agrees_with_record(*record):
            self.problem = INPUT_INDEPENDENT
        return self.problem


def off_problem(
    reference: Any,
    remote: RemoteCandidate,
    make_inputs: Callable[[int], list[Any]],
    seed: int,
    atol: float,
    rtol: float,
) -> str | None:
    """REDUNDANT where the output on `seed`'s inputs is right with every launch left out, else None. A
    runner that hangs or dies raises as in any other call."""
    inputs = make_inputs(seed)
    expected = correctness.run_reference(reference)(0, seed, inputs)
    return REDUNDANT if _right(remote, inputs, expected, seed, OFF, atol, rtol) else None


def _agrees_with_record(
    reference: Any,
    make_inputs: Callable[[int], list[Any]],
    record_seed: int,
    expected: Any,
    atol: float,
    rtol: float,
) -> bool:
    """Whether the reference's output on the recorded trial matches `expected` (another seed's)."""
    recorded = correctness.run_reference(reference)(0, record_seed, make_inputs(record_seed))
    return correctness.within_tolerance(recorded, expected, atol, rtol)[0]


def has_state(reference: Any) -> bool:
    """Whether the reference holds parameters or buffers: its output is a function of them too, and an honest
    kernel may compute from them alone (the elementwise seed of KernelBench's Mamba2 takes differences of a
    parameter's cumulative sum), which the record and the stale call share. There the stale call decides
    nothing (a gap: varying the state between the two calls would close it)."""
    tensors = [*getattr(reference, "parameters", list)(), *getattr(reference, "buffers", list)()]
    return any(t.numel() > 0 for t in tensors)


def _layout(inputs: list[Any]) -> list[Any]:
    """Each input's shape, dtype and device (a tensor's), else its type: what a launch's signature sees."""
    return [(tuple(v.shape), v.dtype, v.device) if hasattr(v, "shape") else type(v) for v in inputs]


def _record_shaped(inputs: list[Any], seed: int) -> list[Any]:
    """The record's inputs with every floating tensor's values changed (its top mantissa bits flipped by a
    pattern drawn from `seed`); integer tensors (lengths, offsets, indices) stay, so every launch keeps
    the record's layout."""
    leaves = [v for v in inputs if hasattr(v, "shape")]
    input_refresh.apply(leaves, input_refresh.make_patterns(leaves, seed)[0])
    return inputs


def _right(
    remote: RemoteCandidate, inputs: list[Any], expected: Any, seed: int, mode: str, atol: float, rtol: float
) -> bool:
    from kernelevolve.eval.judged_run import Verdict

    guarded, _, _ = correctness.into_guarded(remote.checked_inputs, [], inputs, remote.arena)
    try:
        got = remote.call(guarded, expected, seed, launches=mode)
    except (RunnerFailure, ReplyError, Verdict):
        if mode == DECOY:
            raise  # a checked call: its failure is the candidate's
        return False  # it could not make an output this way (or broke a rule trying)
    return correctness.within_tolerance(expected, got, atol, rtol)[0]
