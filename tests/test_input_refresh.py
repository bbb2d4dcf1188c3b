"""Timed calls' inputs: each call's pattern flips low mantissa bits in place, and the judge rebuilds any
call's inputs from the set's start values and the plan (`input_refresh.inputs_at`)."""

from __future__ import annotations

import pytest
import torch

from kernelevolve.eval import input_refresh


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_rebuilding_a_calls_inputs_matches_the_runner_applying_each_pattern_in_turn(
    dtype: torch.dtype,
) -> None:
    start = [torch.randn(6, 40, dtype=dtype), torch.randn(40, dtype=dtype), torch.arange(5)]
    patterns = input_refresh.make_patterns(start, seed=3)
    calls, set_count = 23, 2
    plan = input_refresh.schedule(seed=5, calls=calls)
    served = [[t.clone() for t in start] for _ in range(set_count)]  # what the runner's sets hold
    for call in range(calls):
        leaves = served[call % set_count]
        input_refresh.apply(leaves, patterns[plan[call]])
        rebuilt = input_refresh.inputs_at(
            [t.clone() for t in start], set_count, call % set_count, call, plan, patterns
        )
        assert all(torch.equal(a, b) for a, b in zip(leaves, rebuilt, strict=True)), call
    assert not torch.equal(served[0][0], start[0])  # the patterns changed the values
    assert torch.equal(served[0][2], start[2])  # integer inputs are left alone
    assert all(p[2] is None for p in patterns)


def test_sets_of_other_lengths_than_the_first_take_the_row_fitted_to_theirs() -> None:
    """A jagged batch's values are as many as its seed draws: each set's leaves may be longer or shorter
    than the first set's, which the patterns were made for; the judge's rebuild still matches the runner."""
    first = [torch.randn(30), torch.arange(4)]
    patterns = input_refresh.make_patterns(first, seed=1)
    plan = input_refresh.schedule(seed=2, calls=9)
    sets = [[torch.randn(n), torch.arange(4)] for n in (30, 47, 11)]
    starts = [[t.clone() for t in leaves] for leaves in sets]
    for call in range(9):
        index = call % 3
        input_refresh.apply(sets[index], patterns[plan[call]])
        rebuilt = input_refresh.inputs_at([t.clone() for t in starts[index]], 3, index, call, plan, patterns)
        assert all(torch.equal(a, b) for a, b in zip(sets[index], rebuilt, strict=True)), call
    assert all(not torch.equal(s[0], t[0]) for s, t in zip(sets, starts, strict=True))
