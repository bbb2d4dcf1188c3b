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


def test_one_tensor_in_two_positions_is_one_leaf_refreshed_once() -> None:
    """`get_inputs()` returning `[x, x]`: one leaf, both positions rebuilt onto it, so the runner (refreshing
    its copy of the leaf) and the judge (refreshing the set made again) hand the reference and the candidate
    alike inputs (`tests/adversarial/good/same_input_twice_two_pointers.py`)."""
    from kernelevolve.eval.argument_structure import leaves_of, rebuild_arguments, structure_of

    x, y, z = torch.randn(3, 4), torch.randn(2), torch.randn(5)
    arguments = [x, (x.view(3, 4), y), z, 2.0]  # the same object twice, then an equal view of it
    structure = structure_of(arguments)
    leaves = leaves_of(arguments)
    assert len(leaves) == 3 and leaves[0] is x and leaves[1] is y
    copies = [leaf.clone() for leaf in leaves]  # what the runner maps: its own copy of each leaf
    patterns = input_refresh.make_patterns(copies, seed=3)
    input_refresh.apply(copies, patterns[0])
    rebuilt = rebuild_arguments(structure, copies)
    assert rebuilt[0] is rebuilt[1][0] and rebuilt[1][1] is copies[1] and rebuilt[3] == 2.0
    judged = input_refresh.inputs_at(leaves_of(arguments), 1, 0, 0, [0], patterns)
    assert torch.equal(rebuild_arguments(structure, judged)[1][0], rebuilt[0])
