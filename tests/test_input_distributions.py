"""Correctness inputs from several distributions: the redraw rules, the spec option, and winners' checks."""

from __future__ import annotations

import json
from collections import namedtuple
from concurrent.futures import Future
from pathlib import Path

import pytest
import torch

from kernelevolve.app import confirm_winners
from kernelevolve.platforms import load_platform
from kernelevolve.results.outputs import build_results, summary_table
from kernelevolve.search.graph import SearchGraph
from kernelevolve.specs.input_distributions import (
    DISTRIBUTION_NAMES,
    distributed_inputs,
    distribution_outcomes,
    distribution_seed,
    failed_distributions,
    get_distribution,
    validate_distribution_names,
)
from kernelevolve.specs.loading import SpecError, resolve_spec
from kernelevolve.types import (
    DEFAULT_INPUT_DISTRIBUTIONS,
    Baseline,
    Candidate,
    EvalReport,
    EvalRequest,
    EvalSettings,
    FitnessValue,
    KernelSpec,
    Status,
    TimingStats,
)

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def _generated(seed: int = 0) -> torch.Tensor:
    return torch.randn(12, 34, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------------------------
# The redraw rules


@pytest.mark.parametrize("distribution", DISTRIBUTION_NAMES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_every_distribution_keeps_shape_dtype_device_and_layout(distribution, dtype):
    plain = _generated().to(dtype)
    transposed = _generated(1).to(dtype).t()  # not contiguous: strides (1, 34)
    sliced = _generated(2).to(dtype)[:, ::2]  # a view with gaps
    expanded = _generated(3)[:1].to(dtype).expand(5, 34)  # stride 0 in its first dimension
    given = [plain, transposed, sliced, expanded]
    out = distributed_inputs(given, distribution, seed=3)
    assert isinstance(out, list) and len(out) == len(given)
    for before, after in zip(given, out, strict=True):
        assert after.shape == before.shape and after.dtype == before.dtype and after.device == before.device
        assert after.stride() == before.stride() and after.is_contiguous() == before.is_contiguous()
        assert bool(torch.isfinite(after).all())
    assert out[3].stride()[0] == 0  # still expanded: one row repeated


@pytest.mark.parametrize("distribution", DISTRIBUTION_NAMES)
def test_integer_and_other_values_are_kept_as_they_were(distribution):
    indices = torch.randint(0, 10, (7,))
    offsets = torch.tensor([0, 3, 7], dtype=torch.int32)
    mask = torch.rand(4, 4) > 0.5
    given = [indices, offsets, mask, 3, 2.5, None, "mean"]
    out = distributed_inputs(given, distribution, seed=11)
    assert all(a is b for a, b in zip(out, given, strict=True))


@pytest.mark.parametrize("distribution", DISTRIBUTION_NAMES)
def test_floating_tensors_with_a_meaning_are_kept(distribution):
    ones = torch.ones(8, 8)  # a constant
    labels = torch.randint(0, 5, (16,)).float()  # whole numbers stored as floats
    attention_mask = torch.zeros(4, 4).masked_fill(torch.eye(4, dtype=torch.bool), float("-inf"))
    scalar = torch.tensor(0.37)
    empty = torch.empty(0, 3)
    given = [ones, labels, attention_mask, scalar, empty]
    out = distributed_inputs(given, distribution, seed=5)
    assert all(a is b for a, b in zip(out, given, strict=True))


def test_normal_is_the_inputs_as_given():
    given = [_generated(), torch.arange(3)]
    out = distributed_inputs(given, "normal", seed=123)
    assert out == given and out is not given and all(a is b for a, b in zip(out, given, strict=True))


def test_draws_are_deterministic_in_the_seed_and_differ_between_seeds():
    given = [_generated(), torch.rand(50)]
    for distribution in ("uniform", "heavy_tailed"):
        first = distributed_inputs(given, distribution, seed=9)
        again = distributed_inputs(given, distribution, seed=9)
        other = distributed_inputs(given, distribution, seed=10)
        assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
        assert not torch.equal(first[0], other[0]) and not torch.equal(first[1], other[1])
        assert not torch.equal(first[0], given[0])
    # two tensors of the same shape get different draws
    pair = distributed_inputs([_generated(), _generated(5)], "uniform", seed=1)
    assert not torch.equal(pair[0], pair[1])


def test_what_each_distribution_draws():
    x = torch.randn(256, 256, generator=torch.Generator().manual_seed(0))
    (uniform,) = distributed_inputs([x], "uniform", seed=1)
    assert uniform.min() >= -1 and uniform.max() <= 1 and uniform.min() < -0.9 and uniform.max() > 0.9
    (heavy,) = distributed_inputs([x], "heavy_tailed", seed=1)
    assert heavy.abs().max() > 2 * x.abs().max() and heavy.abs().max() <= 1000  # tails beyond a normal's
    assert heavy.min() < 0 < heavy.max()
    (large,) = distributed_inputs([x], "large", seed=1)
    assert torch.allclose(large, 100 * x)
    (small,) = distributed_inputs([x], "small", seed=1)
    assert torch.allclose(small, x / 1000) and 5e-4 < float(small.std()) < 2e-3


@pytest.mark.parametrize("distribution", DISTRIBUTION_NAMES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_the_sign_and_range_of_the_inputs_are_kept(distribution, dtype):
    g = torch.Generator().manual_seed(4)
    non_negative = torch.randn(300, generator=g).abs().to(dtype)
    non_negative[7] = 0  # exactly zero somewhere: >= 0, not > 0
    positive = (torch.randn(300, generator=g).abs() * 5 + 1e-3).to(dtype)  # beyond 1, > 0
    unit = (1 - torch.rand(300, generator=g)).to(dtype)  # (0, 1], as 1 - torch.rand draws
    rand = torch.rand(300, generator=g).to(dtype)  # torch.rand: [0, 1)
    symmetric = (2 * torch.rand(300, generator=g) - 1).to(dtype)  # [-1, 1]
    out = distributed_inputs([non_negative, positive, unit, rand, symmetric], distribution, seed=8)
    new_non_negative, new_positive, new_unit, new_rand, new_symmetric = out
    given = (non_negative, positive, unit, rand, symmetric)
    if distribution != "normal":  # new tensors, never views of the originals (even where values stay)
        assert all(a.data_ptr() != b.data_ptr() for a, b in zip(out, given, strict=True))
    assert new_non_negative.min() >= 0
    assert new_positive.min() > 0 and bool(torch.isfinite(new_positive).all())
    assert new_unit.min() > 0 and new_unit.max() <= 1
    assert new_rand.min() >= 0 and new_rand.max() <= 1
    assert new_symmetric.abs().max() <= 1
    # log and sqrt references keep working on what stays > 0 / >= 0
    assert bool(torch.isfinite(torch.log(new_positive.float())).all())
    assert bool(torch.isfinite(torch.log(new_unit.float())).all())
    assert not bool(torch.isnan(torch.sqrt(new_non_negative.float())).any())


def test_positive_values_stay_positive_where_the_dtype_would_round_them_to_zero():
    tiny = torch.full((100,), 1e-4, dtype=torch.float16)
    tiny[0] = 2e-4  # not one value
    (small,) = distributed_inputs([tiny], "small", seed=0)  # 1e-7 is below float16's smallest normal
    assert small.min() > 0


def test_structure_and_requires_grad_are_kept():
    Pair = namedtuple("Pair", "a b")
    leaf = _generated().requires_grad_(True)
    given = [(leaf, torch.arange(2)), [Pair(_generated(1), 4)]]
    out = distributed_inputs(given, "heavy_tailed", seed=2)
    (first, index), [pair] = out[0], out[1]
    assert isinstance(out[0], tuple) and isinstance(out[1], list) and isinstance(pair, Pair)
    assert first.requires_grad and first.is_leaf and index is given[0][1] and pair.b == 4
    assert pair.a.shape == (12, 34) and not torch.equal(pair.a, given[1][0].a)


def test_unknown_distributions_are_refused_with_the_valid_names():
    with pytest.raises(ValueError, match=r"unknown input distribution 'gaussian'; valid: normal, uniform"):
        distributed_inputs([_generated()], "gaussian", seed=0)
    with pytest.raises(ValueError, match="valid: normal, uniform, heavy_tailed, large, small"):
        get_distribution("huge")
    assert get_distribution("large").scale == 100.0


def test_names_are_validated_and_normal_always_comes_first():
    assert validate_distribution_names(["large", "uniform", "large"]) == ("normal", "large", "uniform")
    assert validate_distribution_names(["normal"]) == ("normal",)
    with pytest.raises(ValueError, match=r"unknown input distribution\(s\) \['lognormal'\]"):
        validate_distribution_names(["uniform", "lognormal"])
    with pytest.raises(ValueError, match="no input distributions given"):
        validate_distribution_names([])


def test_fresh_seeds_are_deterministic_and_never_the_searchs():
    seeds = {distribution_seed(0, name) for name in DISTRIBUTION_NAMES}
    assert len(seeds) == len(DISTRIBUTION_NAMES) and 0 not in seeds
    assert distribution_seed(0, "large") == distribution_seed(0, "large") != distribution_seed(1, "large")
    assert all(0 < s < 2**31 for s in seeds)


# ---------------------------------------------------------------------------------------------
# The spec option

REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.log(x)

def get_inputs():
    return [torch.rand(4, 8) + 0.1]

def get_init_inputs():
    return []
"""


def _spec_file(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "ref.py").write_text(REFERENCE)
    path = tmp_path / "op.yaml"
    path.write_text(f"name: log\nreference: ref.py\n{extra}")
    return path


def test_a_spec_without_the_key_checks_the_default_distributions(tmp_path):
    spec = resolve_spec(str(_spec_file(tmp_path, "")), load_platform("cpu"))
    assert (
        spec.input_distributions
        == DEFAULT_INPUT_DISTRIBUTIONS
        == ("normal", "uniform", "heavy_tailed", "large")
    )


def test_a_spec_can_opt_out_or_choose_its_distributions(tmp_path):
    cpu = load_platform("cpu")
    opted_out = resolve_spec(str(_spec_file(tmp_path, "input_distributions: [normal]\n")), cpu)
    assert opted_out.input_distributions == ("normal",)
    chosen = resolve_spec(str(_spec_file(tmp_path, "input_distributions: [uniform, small]\n")), cpu)
    assert chosen.input_distributions == ("normal", "uniform", "small")
    one = resolve_spec(str(_spec_file(tmp_path, "input_distributions: normal\n")), cpu)
    assert one.input_distributions == ("normal",)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "[normal, lognormal]",
            r"input_distributions: unknown input distribution\(s\) \['lognormal'\]; valid: ",
        ),
        ("[]", "input_distributions: no input distributions given; valid: normal"),
        (
            "{large: 1}",
            r"input_distributions: must be a name or a list of names, got \{'large': 1\}; valid: ",
        ),
    ],
)
def test_bad_input_distributions_get_a_one_line_error(tmp_path, value, message):
    path = _spec_file(tmp_path, f"input_distributions: {value}\n")
    with pytest.raises(SpecError, match=message) as error:
        resolve_spec(str(path), load_platform("cpu"))
    assert "\n" not in str(error.value)
    if "unknown" in message:
        assert str(error.value).endswith("valid: normal, uniform, heavy_tailed, large, small")


def test_the_fields_round_trip_and_older_json_loads():
    spec = KernelSpec("s", "src", input_distributions=("normal", "small"))
    data = json.loads(json.dumps(spec.to_json()))
    assert data["input_distributions"] == ["normal", "small"]
    assert KernelSpec.from_json(data) == spec
    del data["input_distributions"]  # a spec.json written before the field
    assert KernelSpec.from_json(data).input_distributions == DEFAULT_INPUT_DISTRIBUTIONS
    assert spec.key == KernelSpec("s", "src").key  # how a kernel is checked is not what it computes

    settings = EvalSettings(input_distribution="heavy_tailed", seed=4)
    data = json.loads(json.dumps(settings.to_json()))
    assert EvalSettings.from_json(data) == settings
    del data["input_distribution"]
    assert EvalSettings.from_json(data).input_distribution == "normal"


# ---------------------------------------------------------------------------------------------
# Winners' checks on other distributions


def _stats(ms: float, trials: int = 100) -> TimingStats:
    return TimingStats(ms, ms, 0.0, ms, ms, trials, "cuda_event")


BASELINES = {"default": Baseline(eager=_stats(2.0), compiled=_stats(1.0))}


class WrongWhenLarge:
    """An evaluator whose kernels are right on every input distribution but "large", for the ids given."""

    capacity = 4

    def __init__(self, wrong: set[str]) -> None:
        self.wrong = wrong
        self.requests: list[EvalRequest] = []

    def submit(self, request: EvalRequest) -> Future[EvalReport]:
        self.requests.append(request)
        cid = request.candidate.id
        if cid in self.wrong and request.settings.input_distribution == "large":
            report = EvalReport(
                cid, Status.INCORRECT, "mismatch", "trial 1/5: 9 values differ", max_abs_error=12.5
            )
        else:
            report = EvalReport(cid, Status.OK, latency={"default": _stats(0.8)}, max_abs_error=1e-6)
        done: Future[EvalReport] = Future()
        done.set_result(report)
        return done


def _graph(*times_ms: float) -> tuple[SearchGraph, list[Candidate]]:
    graph, candidates = SearchGraph(), []
    for index, ms in enumerate(times_ms):
        candidate = Candidate(f"# kernel {index}\n", "triton", "tune")
        graph.add_candidate(candidate)
        graph.record(
            candidate.id,
            EvalReport(candidate.id, Status.OK, latency={"default": _stats(ms, 30)}),
            FitnessValue(True, 2.0 / ms, 1.0 / ms),
        )
        candidates.append(candidate)
    return graph, candidates


def test_a_winner_wrong_on_large_inputs_fails_its_confirmation_flagged():
    graph, (winner,) = _graph(0.5)
    evaluator = WrongWhenLarge({winner.id})
    spec = KernelSpec("tiny", "")
    settings = EvalSettings(seed=7, timing_trials=100)
    confirmations = confirm_winners(evaluator, [graph.node(winner.id)], spec, load_platform("h200"), settings)  # type: ignore[arg-type]

    by_distribution = {r.settings.input_distribution: r.settings for r in evaluator.requests}
    assert sorted(by_distribution) == ["heavy_tailed", "large", "normal", "uniform"]
    assert by_distribution["normal"].seed == 7 and by_distribution["normal"].timing_trials == 100
    fresh = [by_distribution[name].seed for name in ("uniform", "heavy_tailed", "large")]
    assert len(set(fresh)) == 3 and 7 not in fresh
    assert all(by_distribution[name].timing_trials <= 2 for name in ("uniform", "heavy_tailed", "large"))

    report = confirmations[winner.id]
    assert report.status is Status.INCORRECT and failed_distributions(report.flags) == ["large"]
    assert "failed_distribution:large" in report.flags
    assert distribution_outcomes(report.flags) == {
        "uniform": "passed",
        "heavy_tailed": "passed",
        "large": "failed",
    }
    assert report.feedback.startswith("wrong on large inputs; large (seed ") and report.max_abs_error == 12.5

    results = build_results(
        spec=spec,
        platform="h200",
        graph=graph,
        baselines=BASELINES,
        stop_reason="max_evaluations",
        elapsed_s=1.0,
        evaluations_this_session=1,
        confirmations=confirmations,
        winners=(None, None),
    )
    assert results["best"] is None and results["best_by_backend"] == {}
    (rejected,) = results["rejected_winners"]
    assert rejected["id"] == winner.id and "failed_distribution:large" in rejected["flags"]
    assert rejected["confirmation"]["input_distributions"]["large"] == "failed"
    assert results["spec"]["input_distributions"] == list(DEFAULT_INPUT_DISTRIBUTIONS)
    assert f"warning: {winner.id} (4.00x vs eager in search) is wrong on large inputs" in summary_table(
        results
    )


def test_a_spec_that_opts_out_is_confirmed_on_its_own_inputs_only():
    graph, (winner,) = _graph(0.5)
    evaluator = WrongWhenLarge({winner.id})
    spec = KernelSpec("tiny", "", input_distributions=("normal",))
    confirmations = confirm_winners(
        evaluator, [graph.node(winner.id)], spec, load_platform("h200"), EvalSettings()
    )  # type: ignore[arg-type]
    assert [r.settings.input_distribution for r in evaluator.requests] == ["normal"]
    assert confirmations[winner.id].ok and confirmations[winner.id].flags == ()
