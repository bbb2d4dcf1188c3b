"""The reference's outputs kept between checks in one evaluation child: reused only where every input that
decides them is the same, in trial order for stateful references, within the byte budget, never shared
with a candidate."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch

from kernelevolve.backends.triton import BACKEND
from kernelevolve.eval import correctness, harness
from kernelevolve.eval.reference_outputs import KEPT, KeptOutputs, TrialOutputs, TrialsKey, trials_key
from kernelevolve.platforms import Platform
from kernelevolve.types import Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec, Status

SEEDS = (11, 12, 13)


def _inputs(seed: int) -> list[torch.Tensor]:
    return [torch.full((4,), float(seed))]


class Counting(torch.nn.Module):
    """Adds how many times it has run: trial k's output needs trials 0..k-1 on the same instance."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return x + self.calls


def _key(seeds: tuple[int, ...] = SEEDS, shape: str = "s") -> TrialsKey:
    return trials_key("reference", shape, 0, seeds, "cpu", torch.float32)


def test_outputs_are_kept_after_every_trial_ran_and_then_reused_as_copies() -> None:
    kept = KeptOutputs()
    first = Counting()
    outputs = TrialOutputs(first, _key(), 1 << 20, kept)
    got = [outputs(t, s, _inputs(s)) for t, s in enumerate(SEEDS)]
    outputs.complete(_inputs, SEEDS)
    assert [float(o[0]) for o in got] == [12.0, 14.0, 16.0] and first.calls == 3
    second = Counting()
    again = TrialOutputs(second, _key(), 1 << 20, kept)
    assert again.reused
    copy = again(0, SEEDS[0], _inputs(SEEDS[0]))
    copy.fill_(-1.0)  # what a candidate could do to the tensor a check holds
    assert float(again(0, SEEDS[0], _inputs(SEEDS[0]))[0]) == 12.0 and second.calls == 0
    # any difference in what decides the outputs is another key
    for other in (_key(seeds=(11, 12, 14)), _key(shape="t")):
        assert not TrialOutputs(Counting(), other, 1 << 20, kept).reused


def test_a_check_stopped_early_completes_the_trials_in_order_on_the_same_instance() -> None:
    kept = KeptOutputs()
    model = Counting()
    outputs = TrialOutputs(model, _key(), 1 << 20, kept)
    outputs(0, SEEDS[0], _inputs(SEEDS[0]))  # the candidate failed on trial 0
    outputs.complete(_inputs, SEEDS)
    assert model.calls == 3
    reused = TrialOutputs(Counting(), _key(), 1 << 20, kept)
    assert [float(reused(t, s, _inputs(s))[0]) for t, s in enumerate(SEEDS)] == [12.0, 14.0, 16.0]


def test_outputs_beyond_the_budget_are_not_kept_nor_tried_again() -> None:
    kept = KeptOutputs()
    outputs = TrialOutputs(Counting(), _key(), 40, kept)
    for trial, seed in enumerate(SEEDS):  # 16 bytes a trial: the third passes 40
        outputs(trial, seed, _inputs(seed))
    outputs.complete(_inputs, SEEDS)
    assert kept.get(_key()) is None and not kept.worth_keeping(_key())
    assert TrialOutputs(Counting(), _key(), 0, KeptOutputs())._computed is None


def test_the_least_recently_used_key_goes_first() -> None:
    kept = KeptOutputs()
    for shape in ("a", "b", "c"):
        outputs = TrialOutputs(Counting(), _key(shape=shape), 100, kept)
        outputs.complete(_inputs, SEEDS)  # 48 bytes each; two fit in 100
    assert kept.get(_key(shape="a")) is None
    assert kept.get(_key(shape="b")) is not None and kept.get(_key(shape="c")) is not None


@pytest.fixture()
def _interpreter() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        BACKEND.prepare_process("cpu")
        yield


def test_the_second_evaluation_runs_no_reference_forward_and_still_catches_a_wrong_kernel(
    _interpreter: None,
    add_spec: KernelSpec,
    cpu_platform: Platform,
    fast_settings: EvalSettings,
    add_kernel: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs: list[int] = []
    original = correctness.run_reference

    def counted(reference: Callable[..., object]) -> Callable[[int, int, list[object]], object]:
        expected = original(reference)

        def run(trial: int, seed: int, inputs: list[object]) -> object:
            runs.append(trial)
            return expected(trial, seed, inputs)

        return run

    monkeypatch.setattr("kernelevolve.eval.reference_outputs.run_reference", counted)

    def evaluate(source: str, settings: EvalSettings = fast_settings) -> EvalReport:
        request = EvalRequest(Candidate(source, "triton", "test"), add_spec, cpu_platform.name, settings)
        return harness.evaluate(request, cpu_platform)

    assert evaluate(add_kernel()).status is Status.OK
    assert len(runs) == 2 * fast_settings.correctness_trials  # two shapes, every trial once
    runs.clear()
    assert evaluate(add_kernel()).status is Status.OK
    wrong = evaluate(add_kernel(result="x - y"))
    assert wrong.status is Status.INCORRECT and wrong.error_name == "mismatch"
    assert runs == []
    # off: the reference runs in every check
    KEPT.clear()
    off = EvalSettings(**{**fast_settings.to_json(), "reference_cache_mb": 0})
    assert evaluate(add_kernel(), off).status is Status.OK and evaluate(add_kernel(), off).status is Status.OK
    assert len(runs) == 4 * off.correctness_trials
