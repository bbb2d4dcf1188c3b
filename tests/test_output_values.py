"""Outputs compared in their own terms (`value_scan`): integer and bool outputs as integers, within the spec's
atol taken whole; complex outputs as (real, imaginary) pairs."""

from __future__ import annotations

import torch

from kernelevolve.eval.correctness import within_tolerance


def test_an_index_one_off_fails_whatever_its_size() -> None:
    expected = torch.tensor([12_345, 3], dtype=torch.int64)
    assert within_tolerance(expected, expected.clone(), 1e-4, 1e-4) == (True, 0.0)
    assert not within_tolerance(expected, expected + torch.tensor([1, 0]), 1e-4, 1e-4)[0]  # rtol is no slack
    big = torch.tensor([(1 << 24) + 1], dtype=torch.int64)  # float32 rounds both to 2**24
    assert not within_tolerance(big, big - 1, 1e-2, 1e-2)[0]


def test_a_whole_atol_allows_a_rounding_step() -> None:
    expected = torch.tensor(
        [100, -7] + [3] * 14, dtype=torch.int8
    )  # a quantizer's output, atol 1.0 in its spec
    tie = torch.zeros_like(expected)
    tie[0] = 1  # a rounding tie broken the other way: one element in 16
    assert within_tolerance(expected, expected + tie, 1.0, 0.0) == (True, 1.0)
    assert not within_tolerance(expected, expected + 2 * tie, 1.0, 0.0)[0]
    # a step at every element is rounding otherwise (truncation), not ties: `value_scan.STEP_SHARE`
    assert within_tolerance(expected, expected + 1, 1.0, 0.0) == (False, 1.0)


def test_a_mask_has_no_rounding_step() -> None:
    mask = torch.zeros(64, dtype=torch.bool)
    flipped = mask.clone()
    flipped[0] = True
    assert not within_tolerance(mask, flipped, 1.0, 0.0)[0]


def test_masks_are_exact() -> None:
    mask = torch.tensor([True, False, True])
    assert within_tolerance(mask, mask.clone(), 1e-2, 1e-2)[0]
    assert not within_tolerance(mask, ~mask, 1e-2, 1e-2)[0]


def test_a_complex_output_is_judged_on_both_parts() -> None:
    expected = torch.polar(torch.ones(6), torch.linspace(0.0, 3.0, 6))
    assert within_tolerance(expected, expected.clone(), 1e-4, 1e-4)[0]
    real_only = torch.complex(expected.real, torch.zeros(6))  # a real cast dropped the imaginary part
    assert not within_tolerance(expected, real_only, 1e-4, 1e-4)[0]
