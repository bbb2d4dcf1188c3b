"""The value comparison of correctness trials, a slice at a time (bounded temporaries on huge outputs)."""

from __future__ import annotations

import math

import pytest
import torch

from kernelevolve.eval import correctness, tensor_guards, value_scan


@pytest.fixture(params=[1 << 24, 7], ids=["whole", "chunks_of_7"])
def chunked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(value_scan, "COMPARE_CHUNK_ELEMENTS", request.param)
    return int(request.param)


def _compare(ref: torch.Tensor, out: torch.Tensor) -> tuple[str, str, float]:
    return value_scan._value_problem("output", ref, out, atol=1e-4, rtol=1e-4)


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


# ---------------------------------------------------------------------------------------------
# Inputs changed in place: bit for bit


def test_unchanged_inputs_of_every_kind_pass() -> None:
    inputs = [
        torch.randn(5, 3),
        torch.tensor([float("nan"), 1.0]),
        torch.arange(6),
        torch.tensor([True, False]),
        torch.randn(4, dtype=torch.complex64),
        torch.randn(4, 6).t(),  # not contiguous
        torch.randn(3, dtype=torch.float16),
    ]
    assert correctness._mutation_problem(inputs, tensor_guards.clone_tree(inputs)) == ""


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (torch.zeros(4), torch.tensor([0.0, -0.0, 0.0, 0.0])),  # equal as numbers, not as bytes
        (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])),
        (torch.arange(4), torch.tensor([0, 1, 7, 3])),
        (torch.tensor([True, True]), torch.tensor([True, False])),
    ],
    ids=["signed_zero", "float", "int", "bool"],
)
def test_an_input_written_in_place_is_caught_with_its_count(
    before: torch.Tensor, after: torch.Tensor
) -> None:
    problem = correctness._mutation_problem([after], [before])
    assert "input 0 was modified in place (1 of" in problem


def test_int64_values_two_to_the_63_apart_do_not_wrap_into_a_pass() -> None:
    ref = torch.tensor([0, 5, 2**62, -(2**62), 7])
    for wrong in (ref | -(2**63), torch.tensor([-(2**63), 5, 2**62, -(2**62), 2**63 - 1])):
        within, error = value_scan.values_within(ref, wrong, 0.0, 0.0)
        assert not within and error == float(2**63 - 1)
    assert value_scan.values_within(ref, ref.clone(), 0.0, 0.0) == (True, 0.0)
    assert value_scan.values_within(ref, ref + (torch.arange(5) == 0), 1.0, 0.0) == (False, 1.0)  # 1 in 5
    many = torch.zeros(64, dtype=torch.int64)
    assert value_scan.values_within(many, many + (torch.arange(64) == 0), 1.0, 0.0) == (True, 1.0)


def test_a_nan_rewritten_with_another_payload_is_a_change() -> None:
    before = torch.tensor([float("nan"), 1.0])
    after = before.clone()
    after.view(torch.int32)[0] = 0x7FC00001  # still NaN, other bytes
    assert torch.isnan(after[0]) and correctness._mutation_problem([after], [before]) != ""


# ---------------------------------------------------------------------------------------------
# The GPU's one-pass summary: the same verdicts as the torch comparison


def _edge_pairs(dtype: torch.dtype) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(case, reference, output) pairs on the GPU, each a different edge of the check."""
    generator = torch.Generator().manual_seed(0)
    ref = torch.randn(2 * 1024 * 32 + 77, generator=generator).to(dtype)  # several programs and a ragged end
    atol = rtol = 1e-4
    edge = ref.float() + (
        atol + (rtol * ref.float()).abs()
    )  # exactly on the tolerance, rounded as torch rounds it
    pairs = [
        ("equal", ref, ref.clone()),
        ("within", ref, (ref.float() + 5e-5).to(dtype)),
        ("on_the_edge", ref, edge.to(dtype)),
        ("one_out", ref, _with(ref, 5000, 1.0)),
        ("last_out", ref, _with(ref, ref.numel() - 1, 10.0)),
    ]
    special = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0, 0.0]).to(dtype)
    pairs += [
        ("matched_non_finite", special, special.clone()),
        ("nan_for_inf", special, torch.tensor([float("nan")] * 3 + [1.0, 0.0]).to(dtype)),
        (
            "unwritten",
            special,
            torch.tensor([float("nan"), float("inf"), -float("inf"), float("nan"), 0.0]).to(dtype),
        ),
        (
            "inf_for_finite",
            special,
            torch.tensor([float("nan"), float("inf"), -float("inf"), float("inf"), 0.0]).to(dtype),
        ),
        (
            "wrong_sign_inf",
            special,
            torch.tensor([float("nan"), -float("inf"), -float("inf"), 1.0, 0.0]).to(dtype),
        ),
    ]
    device = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU runs the kernel in Triton's interpreter
    return [(name, r.to(device), o.to(device)) for name, r, o in pairs]


def _with(ref: torch.Tensor, index: int, delta: float) -> torch.Tensor:
    out = ref.clone()
    out[index] += delta
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_one_pass_summary_agrees_with_the_torch_comparison(dtype: torch.dtype) -> None:
    compare_kernel = pytest.importorskip("kernelevolve.eval.compare_kernel")

    for case, ref, out in _edge_pairs(dtype):
        summary = compare_kernel.summarise(ref, out, 1e-4, 1e-4)
        torch_scan = value_scan._chunked_scan(ref, out, 1e-4, 1e-4)
        torch_passes = (
            torch_scan.all_close and not torch_scan.unwritten and not torch_scan.non_finite_mismatch
        )
        assert summary.passes == torch_passes, case
        assert summary.unwritten == torch_scan.unwritten, case
        close = torch.isclose(out.float(), ref.float(), atol=1e-4, rtol=1e-4, equal_nan=True)
        assert summary.not_close == int((~close).sum()), case
        assert summary.max_error == torch_scan.max_error, case  # bit for bit, not approximately
    assert any(not compare_kernel.summarise(r, o, 1e-4, 1e-4).passes for _, r, o in _edge_pairs(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_the_yes_or_no_check_answers_as_the_torch_comparison_both_ways(dtype: torch.dtype) -> None:
    """`values_within` takes the one-pass summary's word for failing values too (on a GPU; the chunked
    scan on the CPU): the kernel-share calls fail on purpose, and each failing scan cost 0.1 s at 6.4 GB."""
    for case, ref, out in _edge_pairs(dtype):
        torch_scan = value_scan._chunked_scan(ref, out, 1e-4, 1e-4)
        torch_passes = (
            torch_scan.all_close and not torch_scan.unwritten and not torch_scan.non_finite_mismatch
        )
        assert value_scan.values_within(ref, out, 1e-4, 1e-4) == (torch_passes, torch_scan.max_error), case


@pytest.mark.gpu
def test_failing_values_on_the_gpu_get_the_torch_comparisons_feedback() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    ref = torch.zeros(6, 10)
    out = ref.clone()
    out[5, 9] = 0.5
    on_cpu = _compare(ref, out)
    assert _compare(ref.cuda(), out.cuda()) == on_cpu and "at index (5, 9)" in on_cpu[0]
    assert _compare(ref.cuda(), ref.cuda() + 5e-5)[:2] == ("", "")
