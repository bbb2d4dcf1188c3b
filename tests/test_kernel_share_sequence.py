"""The kernel-share calls among a shape's correctness trials: the trial two before the last recorded, the
last two run as decoys, the stale call at a secret place among them, "off" after them
(`eval/kernel_share.py`), checked here with a fake runner that records each call's launch mode."""

from __future__ import annotations

from typing import Any

import pytest

from kernelevolve.eval import correctness, kernel_share

torch = pytest.importorskip("torch")

TRIAL_SEEDS = [11, 12, 13, 14, 15]
EXTRA_SEEDS = [21, 22, 23, 24]


class _Remote:
    """A candidate in a fake runner: right on every call except those it is told to get wrong; wrong too
    where its launches are left out or replayed, as an honest kernel's output is."""

    arena = None

    def __init__(self, wrong_calls: tuple[int, ...] = (), right_when_stale: bool = False) -> None:
        self.checked_inputs: list[Any] | None = None
        self.replay_opaque = False
        self.calls: list[tuple[str | None, int, tuple[int, ...]]] = []  # (mode, seed, first input's shape)
        self.wrong_calls, self.right_when_stale = wrong_calls, right_when_stale

    def call(self, inputs: list[Any], expected: Any, seed: int, launches: str | None = None) -> Any:
        self.calls.append((launches, seed, tuple(inputs[0].shape)))
        out = torch.relu(inputs[0])
        if launches == "off" or (launches == "stale" and not self.right_when_stale):
            return out + 1.0
        return out + 1.0 if len(self.calls) in self.wrong_calls else out

    def state(self, names: list[str], like: list[Any]) -> list[Any | None]:
        return [None] * len(names)

    @property
    def modes(self) -> list[str | None]:
        return [mode for mode, _, _ in self.calls]


class _Counting(torch.nn.Module):
    """A ReLU whose calls move its own state (a call counter): the stale call is not made."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def forward(self, x: Any) -> Any:
        self.count += 1
        return torch.relu(x)


def _make_inputs(seed: int) -> list[Any]:
    return [torch.randn(4, 8, generator=torch.Generator().manual_seed(seed))]


def _jagged_inputs(seed: int) -> list[Any]:
    rows = 2 + seed % 7  # the layout changes with the seed
    return [torch.randn(rows, 8, generator=torch.Generator().manual_seed(seed))]


def _check(
    remote: _Remote, trials: int = 5, reference: Any = None, make_inputs: Any = _make_inputs
) -> tuple[correctness.CorrectnessVerdict, str | None]:
    reference = reference if reference is not None else torch.nn.ReLU()
    seeds = TRIAL_SEEDS[:trials]
    share = kernel_share.ShareCalls(reference, remote, make_inputs, seeds, EXTRA_SEEDS, 1e-5, 1e-5)  # type: ignore[arg-type]
    verdict = correctness.check_correctness(
        reference, lambda *a: None, make_inputs, seeds, 1e-5, 1e-5, remote=remote, share=share
    )
    return verdict, share.finish() if verdict.ok and not verdict.stateful else None


def _fix_stale_slot(monkeypatch: pytest.MonkeyPatch, slot: int) -> None:
    monkeypatch.setattr(kernel_share, "plan", lambda trials: kernel_share.Plan(trials, slot))


def test_five_trials_make_seven_calls_with_the_stale_one_at_a_secret_place() -> None:
    places = set()
    for _ in range(40):
        remote = _Remote()
        verdict, problem = _check(remote)
        assert verdict.ok and problem is None
        modes = remote.modes
        assert len(modes) == 7
        assert modes[:3] == [None, None, "record"] and modes[6] == "off"
        assert sorted(modes[3:6]) == ["decoy", "decoy", "stale"]  # type: ignore[type-var]
        places.add(modes.index("stale"))
    assert places == {3, 4, 5}


@pytest.mark.parametrize("slot", [0, 1, 2])
def test_the_decoys_are_the_last_trials_in_order(monkeypatch: pytest.MonkeyPatch, slot: int) -> None:
    _fix_stale_slot(monkeypatch, slot)
    remote = _Remote()
    _check(remote)
    decoys = [seed for mode, seed, _ in remote.calls if mode == "decoy"]
    assert decoys == TRIAL_SEEDS[3:]
    assert remote.calls[3 + slot][:2] == ("stale", EXTRA_SEEDS[0])
    assert remote.calls[2][1] == TRIAL_SEEDS[2]  # the record


@pytest.mark.parametrize("trials", [1, 2])
def test_fewer_trials_keep_two_decoy_calls_beside_the_stale_one(trials: int) -> None:
    for _ in range(10):
        remote = _Remote()
        verdict, problem = _check(remote, trials)
        assert verdict.ok and problem is None
        modes = remote.modes  # the first trial recorded, the second (of two) a decoy, pure decoys make up two
        assert len(modes) == 5 and modes[0] == "record" and modes[-1] == "off"
        assert sorted(modes[1:-1]) == ["decoy", "decoy", "stale"]  # type: ignore[type-var]
        assert [seed for mode, seed, _ in remote.calls if mode == "decoy"][: trials - 1] == TRIAL_SEEDS[
            1:trials
        ]


def test_a_failing_decoy_trial_is_a_trial_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    _fix_stale_slot(monkeypatch, 2)  # T4 is the fourth call
    verdict, _ = _check(_Remote(wrong_calls=(4,)))
    assert not verdict.ok and verdict.check == "mismatch" and verdict.trial == 3
    assert verdict.feedback.startswith(f"trial 4/5 (seed {TRIAL_SEEDS[3]})")


def test_a_failing_decoy_after_the_trials_is_a_decoy_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    _fix_stale_slot(monkeypatch, 2)  # one trial: record, decoy, decoy, stale, off
    verdict, problem = _check(_Remote(wrong_calls=(2,)), trials=1)
    assert verdict.ok and problem == kernel_share.DECOY_WRONG


def test_a_right_stale_call_among_the_trials_is_reported_after_them(monkeypatch: pytest.MonkeyPatch) -> None:
    _fix_stale_slot(monkeypatch, 0)
    remote = _Remote(right_when_stale=True)
    verdict, problem = _check(remote)
    assert verdict.ok and problem == kernel_share.INPUT_INDEPENDENT
    assert remote.modes == [None, None, "record", "stale", "decoy", "decoy"]  # no call after the problem
    # a trial failing after it is reported first, as the trials' verdict
    remote = _Remote(right_when_stale=True, wrong_calls=(6,))
    verdict, _ = _check(remote)
    assert not verdict.ok and verdict.check == "mismatch" and verdict.trial == 4


def test_no_stale_call_once_the_reference_moved_its_state() -> None:
    remote = _Remote()
    verdict, _ = _check(remote, reference=_Counting())
    assert verdict.ok and verdict.stateful
    assert remote.modes == [None, None, "record", "decoy", "decoy"]


@pytest.mark.parametrize("slot", [0, 1, 2])
def test_jagged_inputs_put_the_stale_call_among_record_shaped_decoys(
    monkeypatch: pytest.MonkeyPatch, slot: int
) -> None:
    _fix_stale_slot(monkeypatch, slot)
    remote = _Remote()
    verdict, problem = _check(remote, make_inputs=_jagged_inputs)
    assert verdict.ok and problem is None
    assert remote.modes[:5] == [None, None, "record", "decoy", "decoy"] and remote.modes[-1] == "off"
    after = remote.calls[5:8]
    assert sorted(mode for mode, _, _ in after) == ["decoy", "decoy", "stale"]  # type: ignore[type-var]
    record_shape = remote.calls[2][2]
    assert all(shape == record_shape for _, _, shape in after)  # alike: the record's layout
