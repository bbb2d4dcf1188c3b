"""Do the candidate's own kernels do a part of the work? One checked call with its launches left out.

Counting launches (`no_kernel_ran`) shows that a kernel ran, not that the output needed it: a candidate
can let PyTorch compute the whole output and launch a Triton kernel on a token part of it, rewriting
values that were already right (`tests/adversarial/hacks/permissive_token_launch.py`). So, once a shape's
checks have passed, the judge asks for one more call on fresh inputs with every Triton launch (and CUDA
graph replay) turned into a no-op in the runner. The runner poisons its allocator before each call, so a
kernel's output left unwritten holds poison, not an earlier call's values. If the output is still right,
the kernels contributed nothing to it and the candidate fails (`kernel_work_redundant`); if it is wrong,
or the call fails for want of its kernels, they did work.

This shows the kernels' work is needed for some of the output, not how large a share it is: a candidate
whose kernel writes one element PyTorch left out passes, and so does one that makes its output depend on
a token kernel's trivial result (multiplied by a flag the kernel sets). The call is the runner's word like
every run-time check (a candidate reaching the runner's flag could tell it apart); the static checks
stand in front.
Skipped where the reference changes its own state (running statistics) or the spec has a backward: a
further reference call would move the state the candidate's is compared with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelevolve.eval import correctness
from kernelevolve.eval.remote import RemoteCandidate, RunnerFailure
from kernelevolve.eval.runner_channel import ReplyError
from kernelevolve.eval.tensor_guards import guard_inputs

REDUNDANT = "kernel_work_redundant"


def kernels_needed(
    reference: Any,
    remote: RemoteCandidate,
    make_inputs: Callable[[int], list[Any]],
    seed: int,
    atol: float,
    rtol: float,
) -> bool:
    """Whether the candidate's output on `seed`'s inputs is wrong (or not made) with its launches left
    out. A runner that hangs or dies raises as in any other call."""
    from kernelevolve.eval.judged_run import Verdict

    inputs = make_inputs(seed)
    expected = correctness.run_reference(reference)(0, seed, inputs)
    guarded, _ = guard_inputs(inputs, remote.arena)
    try:
        got = remote.call(guarded, expected, seed, launches_off=True)
    except (RunnerFailure, ReplyError, Verdict):
        return True  # it could not make an output without its kernels (or broke a rule trying)
    right, _ = correctness.within_tolerance(expected, got, atol, rtol)
    return not right
