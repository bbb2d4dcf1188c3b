"""The stale-replay record (`eval/launch_replay.py`) on plain CPU tensors: a launch stood in for by a Python
function, so what is recorded and written back is visible element by element."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from kernelevolve.eval import launch_replay


def _kernel() -> None:  # the launch's identity: its function's name
    pass


def _launch(run: Callable[..., Any], *args: Any) -> None:
    launch_replay.around(lambda kernel, *a, **kw: run(*a), _kernel, args, {})


@pytest.fixture(autouse=True)
def _fresh_record() -> Iterator[None]:
    launch_replay.forget()
    yield
    launch_replay.forget()


def _double(x: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(x * 2)


def test_an_input_dependent_launch_gets_the_recorded_values_back_in_the_stale_call() -> None:
    launch_replay.set_mode(launch_replay.RECORD)
    recorded_x = torch.arange(1.0, 17.0)
    _launch(_double, recorded_x, torch.zeros(16))
    launch_replay.set_mode(launch_replay.STALE)
    out = torch.empty(16)
    _launch(_double, torch.full((16,), -1.0), out)
    assert torch.equal(out, recorded_x * 2)  # every element it changed is the record's


def test_a_decoy_call_writes_nothing_back() -> None:
    launch_replay.set_mode(launch_replay.RECORD)
    _launch(_double, torch.arange(1.0, 17.0), torch.zeros(16))
    launch_replay.set_mode(launch_replay.DECOY)
    out = torch.empty(16)
    _launch(_double, torch.full((16,), -1.0), out)
    assert torch.equal(out, torch.full((16,), -2.0))


def test_an_input_independent_flag_is_left_as_it_is() -> None:
    def set_flag(flag: torch.Tensor) -> None:
        flag.fill_(1.0)

    launch_replay.set_mode(launch_replay.RECORD)
    _launch(set_flag, torch.zeros(1))
    launch_replay.set_mode(launch_replay.STALE)
    flag = torch.zeros(1)
    _launch(set_flag, flag)
    assert flag.item() == 1.0  # the same changes as recorded: nothing to tell, nothing overwritten


def test_a_large_argument_is_sampled_and_the_sample_is_written_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # past the window an output is compared on every k-th element: the record stays small, and an honest
    # kernel's output still comes out wrong where the sample is written back
    monkeypatch.setattr(launch_replay, "_WINDOW_BYTES", 4 * 64)
    size = (8, 256)  # 8 KiB of float32: every 32nd element along the longest dimension
    launch_replay.set_mode(launch_replay.RECORD)
    recorded_x = torch.randn(size)
    _launch(_double, recorded_x, torch.full(size, float("nan")))
    (_, changes) = launch_replay._State.launches[0]
    assert all(mask.numel() == 8 * 8 for mask, _ in changes.values())
    launch_replay.set_mode(launch_replay.STALE)
    x, out = torch.randn(size), torch.empty(size)
    _launch(_double, x, out)
    replaced = out != x * 2
    assert torch.equal(
        replaced, torch.zeros(size, dtype=torch.bool).index_fill_(1, torch.arange(0, 256, 32), True)
    )
    assert torch.equal(out[:, ::32], recorded_x[:, ::32] * 2)


def test_an_input_independent_write_outside_the_sample_is_never_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(launch_replay, "_WINDOW_BYTES", 4 * 64)

    def flag_at_one(flag: torch.Tensor) -> None:
        flag[1] = 1.0  # outside the sample (every 32nd element from the first)

    launch_replay.set_mode(launch_replay.RECORD)
    _launch(flag_at_one, torch.zeros(1024))
    assert launch_replay._State.launches[0][1] == {}  # the stale call keeps its own values: fail-closed


def test_tensor_arguments_are_read_by_type_alone() -> None:
    """A launch's arguments are read with Python dispatch off: a swapped class's method, a list subclass's
    `__iter__` or a property `__class__` would run candidate code unseen there."""
    ran: list[str] = []

    class Swapped(torch.Tensor):
        def view(self, *args: object) -> torch.Tensor:
            ran.append("view")
            return torch.Tensor.view(self, *args)  # type: ignore[arg-type]

    class Items(list):  # type: ignore[type-arg]
        def __iter__(self):  # type: ignore[no-untyped-def]
            ran.append("__iter__")
            return super().__iter__()

    class Odd:
        @property
        def __class__(self) -> type:  # type: ignore[override]
            ran.append("__class__")
            return torch.Tensor

        @property
        def base(self) -> torch.Tensor:
            ran.append("base")
            return torch.zeros(1)

    plain, swapped = torch.zeros(2), torch.zeros(2)
    swapped.__class__ = Swapped
    found = dict(launch_replay._tensor_args((plain, swapped, Items([plain]), Odd(), (plain,)), {"k": plain}))
    assert list(found) == [0, (4, 0), "k"] and ran == []
