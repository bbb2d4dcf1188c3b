"""The runner's own work runs no candidate code: the collector paused, swapped classes refused, outputs
described by type (`eval/own_work.py`, `eval/runner_outputs.py`, the timed guard, the strict trace)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from kernelevolve.eval import own_work, runner_outputs, runner_trace, timed_guard
from kernelevolve.eval.static.checks import check_source

RAN: list[str] = []


class _Tensor(torch.Tensor):
    @property
    def device(self) -> Any:  # type: ignore[override]
        RAN.append("device")
        return torch.Tensor.device.__get__(self)  # type: ignore[attr-defined]

    def numel(self) -> int:
        RAN.append("numel")
        return torch.Tensor.numel(self)


class _Storage(torch.UntypedStorage):
    def data_ptr(self) -> int:
        RAN.append("data_ptr")
        return torch.UntypedStorage.data_ptr(self)


def _swapped_tensor() -> torch.Tensor:
    t = torch.zeros(4)
    t.__class__ = _Tensor
    return t


def _swapped_storage() -> torch.Tensor:
    t = torch.zeros(4)
    t.untyped_storage().__class__ = _Storage
    return t


class list(list):  # noqa: A001 - a subclass named as the builtin, described as "list" before
    def __iter__(self) -> Iterator[Any]:
        RAN.append("__iter__")
        return super().__iter__()


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    RAN.clear()
    yield
    RAN.clear()


def test_exact_by_type_alone() -> None:
    assert own_work.exact(torch.zeros(2))
    assert not own_work.exact(_swapped_tensor()) and not own_work.exact(_swapped_storage())
    parameter = torch.nn.Parameter(torch.zeros(2))
    assert not own_work.exact(parameter) and own_work.exact(parameter, parameters=True)
    assert not own_work.exact(3) and RAN == []


def test_type_name_ignores_a_metaclass_property() -> None:
    class Meta(type):
        @property
        def __name__(cls) -> str:  # type: ignore[override]
            RAN.append("__name__")
            return "list"

    class Odd(metaclass=Meta):
        pass

    assert own_work.type_name(Odd) == "Odd" and RAN == []


def test_collector_runs_only_within_candidate_code() -> None:
    was = gc.isenabled()
    gc.enable()
    try:
        own_work.pause_collector()
        assert not gc.isenabled()
        with own_work.collecting():
            assert gc.isenabled()
            with own_work.collecting():
                gc.disable()  # whatever the candidate does to it
            assert not gc.isenabled()  # the inner exit stops it; the outer one keeps it stopped
            gc.enable()
        assert not gc.isenabled()
        assert own_work.collecting_call(gc.isenabled)() is True
        assert not gc.isenabled()
    finally:
        own_work._STATE.update(paused_from_on=False, depth=0)
        (gc.enable if was else gc.disable)()


def test_quiet_hides_the_runners_ops_from_modes() -> None:
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[str] = []

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    slot, value = torch.zeros(3), torch.ones(3)
    with Mode(), own_work.quiet():
        slot.copy_(value)
    assert seen == [] and bool((slot == 1).all())


def test_tensors_in_does_not_enter_other_containers() -> None:
    x = torch.zeros(1)
    assert own_work.tensors_in([x, (x, {"k": x})]) == [x, x, x]
    assert own_work.tensors_in([list([x])]) == [] and RAN == []


def test_description_is_by_type() -> None:
    out = torch.zeros(2)
    leaves, tensors = runner_outputs.describe(list([out]), [])
    assert leaves == [{"path": "output", "kind": "object", "type": "list"}] and tensors == []
    leaves, tensors = runner_outputs.describe((_swapped_storage(), _swapped_tensor(), out), [])
    assert [leaf.get("plain") for leaf in leaves[1:]] == [False, False, True]
    assert leaves[1]["type"] == "Tensor over a _Storage" and leaves[2]["type"] == "_Tensor"
    assert tensors[:2] == [None, None] and tensors[2] is out
    assert RAN == []


def test_timed_guard_refuses_swapped_outputs_and_inputs() -> None:
    slot = torch.zeros(4)
    guard = timed_guard.TimedGuard([slot], 0, strict=False)
    guard.before([torch.zeros(4)])
    with pytest.raises(timed_guard.TimedViolation) as raised:
        guard.after(0, _swapped_storage())
    assert raised.value.check == "output_type"
    x = torch.zeros(4)
    guard.before([x])
    x.__class__ = _Tensor  # what the call could do to the input the runner keeps
    with pytest.raises(timed_guard.TimedViolation) as raised:
        guard.after(1, torch.zeros(4))
    assert raised.value.check == "input_type" and RAN == []


def test_the_launch_floor_comes_from_judged_calls_that_launched() -> None:
    """Timed calls launch as many kernels as the fewest of the checked calls judged right that launched any:
    the launches-left-out call, the stale-replay call and a call that launched nothing lower no floor."""
    floor = None
    for launches, mode in ((3, "record"), (0, None), (1, "stale"), (0, "decoy"), (0, "off"), (2, "decoy")):
        floor = timed_guard.lowered_floor(floor, launches, mode)
    assert floor == 2
    assert timed_guard.lowered_floor(None, 0, None) is None  # none yet: the correctness stage's no_kernel_ran


def test_state_put_back_refuses_a_swapped_state_tensor() -> None:
    """The runner puts ModelNew's state back between timed calls by `copy_` on it: one whose class a call
    swapped would run candidate code there (`hacks/lazy_state_copy_swapped_class`)."""
    model = torch.nn.Module()
    model.register_buffer("running", torch.zeros(4))
    model.hidden = torch.zeros(4)
    names, start = ["running", "hidden", None], [torch.ones(4), torch.ones(4), torch.ones(4)]
    timed_guard.put_back_state(model, names, start)  # PyTorch's own classes: put back
    assert torch.equal(model.running, torch.ones(4)) and torch.equal(model.hidden, torch.ones(4))
    model.hidden = torch.zeros(4)  # replaced by a call: found by name again
    timed_guard.put_back_state(model, names, start)
    assert torch.equal(model.hidden, torch.ones(4))
    model.running.__class__ = _Tensor
    with pytest.raises(timed_guard.TimedViolation) as raised:
        timed_guard.put_back_state(model, names, start)
    assert raised.value.check == "input_type" and RAN == []


def test_strict_trace_counts_ops_on_swapped_classes_without_reading_them() -> None:
    probe = _swapped_tensor()
    scratch = torch.zeros(4)
    with runner_trace.OpTrace() as trace:
        scratch.copy_(probe)
    assert any("candidate's class" in op for op in trace.compute_ops)
    assert "device" not in RAN
    with runner_trace.OpTrace() as trace:
        scratch.copy_(torch.ones(4))
        torch.nn.Parameter(torch.zeros(4)).view(2, 2)
    assert trace.compute_ops == set()


def test_a_finalizer_is_rejected_statically() -> None:
    source = "class Later:\n    def __del__(self):\n        pass\n"
    assert "lazy_result" in {issue.code for issue in check_source(source, "triton", True)}


def test_an_audit_hook_added_after_the_snapshot_is_named() -> None:
    import subprocess
    import sys

    # in a child: an audit hook can never be removed from the process that adds it
    script = (
        "import sys\n"
        "from kernelevolve.eval import left_behind\n"
        "left_behind.snapshot()\n"
        "assert left_behind.changed() == []\n"
        "sys.addaudithook(lambda event, args: None)\n"
        "print(left_behind.changed())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "an audit hook" in done.stdout


def test_interpreter_hooks_name_replaced_builtins_modules_and_finders() -> None:
    import builtins
    import json  # noqa: F401 - loaded before the snapshot, taken out below
    import sys

    from kernelevolve.eval import interpreter_hooks

    interpreter_hooks.snapshot()
    try:
        assert interpreter_hooks.changed() == []
        original = builtins.len
        builtins.len = lambda value: original(value)
        try:
            assert interpreter_hooks.changed() == ["a builtin replaced"]
        finally:
            builtins.len = original
        json = sys.modules.pop("json")
        try:
            assert interpreter_hooks.changed() == ["a loaded module taken out of sys.modules or replaced"]
        finally:
            sys.modules["json"] = json

        class Finder:
            def find_spec(self, *args: object) -> None:
                return None

        sys.meta_path.insert(0, Finder())
        try:
            assert interpreter_hooks.changed() == ["an import finder or path hook"]
        finally:
            del sys.meta_path[0]
        assert interpreter_hooks.changed() == []
    finally:
        interpreter_hooks._SNAPSHOT.clear()


def test_numbers_and_plain_lists_are_put_back_into_the_modules_own_dictionary() -> None:
    """A step counter and a list of tensors (`module_state.state`) are replaced by fresh copies of the start;
    a parameter a forward moves in place is copied back in place; a counterpart whose layout changed (a list
    grown, a number turned into another object) is refused, nothing of it read."""
    model = torch.nn.Module()
    model.calls = 7
    model.last = [torch.zeros(2), torch.zeros(2)]
    model.centre = torch.nn.Parameter(torch.zeros(3))
    names, start = ["calls", "last", "centre"], [2, [torch.ones(2), torch.full((2,), 2.0)], torch.ones(3)]
    timed_guard.put_back_state(model, names, start)
    assert model.calls == 2 and torch.equal(model.last[1], torch.full((2,), 2.0))
    assert model.last[0] is not start[1][0] and torch.equal(model.centre, torch.ones(3))
    model.last.append(torch.zeros(2))
    with pytest.raises(timed_guard.TimedViolation) as raised:
        timed_guard.put_back_state(model, names, start)
    assert raised.value.check == "input_type"
