"""Do the candidate's own kernels do a part of the work? Calls with their launches left out or replayed.

Counting launches (`no_kernel_ran`) shows that a kernel ran, not that the output needed it. So once a
shape's checks have passed, the judge makes more calls on fresh inputs:

- "off": every Triton launch (and CUDA graph replay) a no-op. The runner poisons its allocator before
  each call, so a kernel's output left unwritten holds poison. Still right: the kernels contributed
  nothing (`kernel_work_redundant`, `tests/adversarial/hacks/permissive_token_launch.py`).
- "stale": every launch runs, then the elements it changed in the shape's last correctness trial are
  overwritten with that trial's values (`launch_replay`). Still right: what the kernels changed does
  not depend on the inputs, a flag the output is multiplied by or values rewritten unchanged
  (`kernel_work_input_independent`, `permissive_flag_dependent_output.py`). Inconclusive where the two
  inputs' reference outputs agree and where the recorded trial replayed a CUDA graph; not made (nor its
  decoys, nor the record) where the reference holds parameters or buffers (honest kernels may compute from
  those alone, the same in both calls). Where the stale seed's inputs are shaped unlike the record's (a
  jagged batch: its row count is drawn per seed), an honest kernel's launches would find no recorded
  launch of their layout to be replaced by, and keep their own values: so these three calls take the
  record's inputs with their floating values changed (`input_refresh`'s mantissa flips) instead.
- "decoy" (two): like "stale" without writing back; their outputs must be right
  (`kernel_share_decoy_wrong`). A candidate can tell the "off" call (its kernels' writes are missing),
  never which of the other three is the stale one: the three run in a secret order, "off" after them,
  so a candidate returning garbage where it guesses a check fails a decoy
  (`permissive_flag_garbage_after_checks.py`).

This shows the kernels compute something from the inputs that the output needs, not how large a share it
is: a token kernel copying one input element that the output is made to depend on passes
(`permissive_token_input_dependent.py`), and so does a kernel writing one element PyTorch left out. No
check of dependence can tell those from an honest small kernel (a cuBLAS matmul and a Triton epilogue).
The calls are the runner's word like every run-time check; the static checks stand in front.
Skipped where the reference changes its own state (running statistics) or the spec has a backward: a
further reference call would move the state the candidate's is compared with.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from kernelevolve.eval import correctness, input_refresh
from kernelevolve.eval.remote import RemoteCandidate, RunnerFailure
from kernelevolve.eval.runner_channel import ReplyError
from kernelevolve.eval.tensor_guards import _layout as tensor_layout
from kernelevolve.eval.tensor_guards import guard_inputs

REDUNDANT = "kernel_work_redundant"
INPUT_INDEPENDENT = "kernel_work_input_independent"
DECOY_WRONG = "kernel_share_decoy_wrong"
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


def share_problem(
    reference: Any,
    remote: RemoteCandidate,
    make_inputs: Callable[[int], list[Any]],
    record_seed: int,
    seeds: list[int],
    atol: float,
    rtol: float,
) -> str | None:
    """The first of REDUNDANT, INPUT_INDEPENDENT, DECOY_WRONG the calls on `seeds` (four) show, or None.
    `record_seed`: the trial whose launches the runner recorded. A runner that hangs or dies raises as in
    any other call."""
    # where the stale call would decide nothing, it and its decoys are not made (three calls saved)
    modes = [] if has_state(reference) else ["stale", "decoy", "decoy"]
    random.SystemRandom().shuffle(modes)  # secret: the stale call is one of three alike
    if modes:
        # the trials' guarded inputs hold the record's layout (the last trial's); no need to draw them again
        last = remote.checked_inputs
        record_layout = _layout(last if last is not None else make_inputs(record_seed))
    for mode, seed in zip([*modes, "off"], seeds[len(seeds) - len(modes) - 1 :], strict=True):
        inputs = make_inputs(seed)
        if mode != "off" and _layout(inputs) != record_layout:
            del inputs
            inputs = _record_shaped(make_inputs(record_seed), seed)
        expected = correctness.run_reference(reference)(0, seed, inputs)
        right = _right(remote, inputs, expected, seed, mode, atol, rtol)
        del inputs  # a multi-GB problem holds one input set at a time
        if mode == "decoy" and not right:
            return DECOY_WRONG
        if mode == "off" and right:
            return REDUNDANT
        # (inputs whose reference outputs agree cannot show that the kernels' work depends on them; the
        # record's output is made only for a right stale call, which an honest kernel never gives)
        right_stale = mode == "stale" and right and not remote.replay_opaque
        if right_stale and not _agrees_with_record(reference, make_inputs, record_seed, expected, atol, rtol):
            return INPUT_INDEPENDENT
        del expected  # before the next call's are made
    return None


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

    guarded = remote.checked_inputs
    if guarded is not None and tensor_layout(guarded) == tensor_layout(inputs):
        correctness.refill(guarded, inputs)  # the storage the trials used: a cache keyed by it goes stale
    else:
        guarded, _ = guard_inputs(inputs, remote.arena)
    try:
        got = remote.call(guarded, expected, seed, launches=mode)
    except (RunnerFailure, ReplyError, Verdict):
        if mode == "decoy":
            raise  # a checked call: its failure is the candidate's
        return False  # it could not make an output this way (or broke a rule trying)
    return correctness.within_tolerance(expected, got, atol, rtol)[0]
