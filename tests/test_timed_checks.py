"""The judge's check of a timed call keeps its own copy of what it compares against (`eval/timed_checks`)."""

from __future__ import annotations

import torch

from kernelevolve.eval.timed_checks import OutputCheck


def test_state_is_restored_from_the_judges_copy_not_the_shared_one() -> None:
    """`start` is the copy a runner maps: what the candidate writes there after the timing began must not
    reach the reference the judge checks with (`hacks/stateful_reference_poisoned_start`)."""
    check = OutputCheck(None, lambda _: [], [], [], [], [], 0.0, 0.0, 1, 0)
    buffer = torch.zeros(4)
    shared_start = torch.arange(4.0)
    check.keep_state([buffer], [shared_start])
    shared_start.fill_(float("nan"))  # the runner writes the shared start once the timing has begun
    buffer.fill_(7.0)  # and the reference's own calls move the buffer
    check._restore()
    assert torch.equal(buffer, torch.arange(4.0))
