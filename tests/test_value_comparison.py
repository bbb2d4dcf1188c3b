"""The value comparison of correctness trials, a slice at a time (bounded temporaries on huge outputs)."""

from __future__ import annotations

import math

import pytest
import torch

from kernelevolve.eval import correctness


@pytest.fixture(params=[1 << 24, 7], ids=["whole", "chunks_of_7"])
def chunked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(correctness, "COMPARE_CHUNK_ELEMENTS", request.param)
    return int(request.param)


def _compare(ref: torch.Tensor, out: torch.Tensor) -> tuple[str, str, float]:
    return correctness._value_problem("output", ref, out, atol=1e-4, rtol=1e-4)


def test_close_values_pass_with_their_max_error(chunked: int) -> None:
    ref = torch.linspace(-1, 1, 60).reshape(6, 10)
    problem, check, error = _compare(ref, ref + 5e-5)
    assert (problem, check) == ("", "") and math.isclose(error, 5e-5, rel_tol=1e-3)


def test_the_worst_element_is_reported_wherever_its_chunk_is(chunked: int) -> None:
    ref = torch.zeros(6, 10)
    out = ref.clone()
    out[1, 2] = 0.01
    out[5, 9] = 0.5  # the worst, in the last chunk
    problem, check, error = _compare(ref, out)
    assert check == "mismatch" and error == pytest.approx(0.5)
    assert "at index (5, 9)" in problem and "2 of 60 elements out of tolerance" in problem


def test_unwritten_outputs_report_the_first_and_the_count(chunked: int) -> None:
    ref = torch.ones(60)
    out = ref.clone()
    out[23] = out[40] = float("nan")
    out[3] = 1.5
    problem, check, error = _compare(ref, out)
    assert check == "nonfinite" and "2 of 60 values" in problem and "first at index (23,)" in problem
    assert error == pytest.approx(0.5)


def test_non_finite_reference_values_must_be_matched(chunked: int) -> None:
    ref = torch.zeros(30)
    ref[17] = float("inf")
    ref[25] = float("nan")
    matching = ref.clone()
    assert _compare(ref, matching)[1] == ""
    out = ref.clone()
    out[17] = -float("inf")
    problem, check, _ = _compare(ref, out)
    assert check == "mismatch" and "at index (17,)" in problem and "1 of 30" in problem


def test_non_contiguous_outputs_compare_by_position(chunked: int) -> None:
    ref = torch.arange(24.0).reshape(4, 6)
    out = ref.t().contiguous().t()  # same values, column-major storage
    assert _compare(ref, out)[1] == ""
    out[2, 3] += 1.0
    assert "at index (2, 3)" in _compare(ref, out)[0]
