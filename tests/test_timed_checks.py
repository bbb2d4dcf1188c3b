"""The judge's check of a timed call keeps its own copy of what it compares against (`eval/timed_checks`)."""

from __future__ import annotations

import torch

from kernelevolve.eval.shared_tensors import SharedArena
from kernelevolve.eval.timed_checks import OutputCheck


class _Carried(torch.nn.Module):
    """State in a buffer updated in place, one replaced each call, and a plain attribute replaced each call."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("running", torch.zeros(4))
        self.register_buffer("replaced", torch.zeros(4))
        self.inner = torch.nn.Module()
        self.inner.hidden = torch.zeros(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.running.add_(x)
        self.replaced = self.replaced + x
        self.inner.hidden = self.inner.hidden + x
        return self.inner.hidden


def test_state_is_restored_by_name_from_the_judges_copy() -> None:
    """`start` is the copy a runner maps: what the candidate writes there after the timing began must not
    reach the reference (`hacks/stateful_reference_poisoned_start`); and a call that replaces its state
    tensor rather than updating it in place is put back too (`hacks/stateful_reference_reassigned_timed_
    unchecked`, `hacks/carried_hidden_attribute_timed_unchecked`)."""
    model = _Carried()
    check = OutputCheck(None, lambda _: [], [], [], [], [], 0.0, 0.0, 1, 0)
    names = ["running", "replaced", "inner.hidden"]
    shared_start = [torch.arange(4.0) for _ in names]
    check.keep_state(model, names, shared_start, SharedArena("cpu"))
    for value in shared_start:
        value.fill_(float("nan"))  # the runner writes the shared start once the timing has begun
    out = model(torch.ones(4))
    model(torch.ones(4))  # the reference's own calls move its state on, replacing two of the tensors
    check._restore()
    for tensor in (model.running, model.replaced, model.inner.hidden):
        assert torch.equal(tensor, torch.arange(4.0))
    assert torch.equal(out, torch.ones(4))  # an output that was the state tensor is left as it was


def test_a_plain_attribute_moved_to_another_device_is_unchanged() -> None:
    """KernelBench's RNNs replace `self.h0` by its copy on the input's device each call: the same values
    (on a GPU another device, which the comparison moves back; here a copy on the same one)."""
    from kernelevolve.eval import module_state

    model = torch.nn.Module()
    model.h0 = torch.ones(3)
    before = module_state.snapshot(model)
    model.h0 = model.h0.to("cuda" if torch.cuda.is_available() else "cpu", copy=True)
    assert module_state.changed(model, before) == []
    model.h0 = model.h0 * 2.0
    assert module_state.changed(model, before) == ["h0"]


class _Counting(torch.nn.Module):
    """A step counter, a list of tensors replaced each call and a parameter moved in place, all read."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.last = [torch.zeros(4)]
        self.centre = torch.nn.Parameter(torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        with torch.no_grad():
            self.centre.add_(x)
        out = x * self.calls + self.last[0] + self.centre
        self.last = [out.detach()]
        return out


def test_numbers_lists_and_parameters_are_state_and_restored() -> None:
    from kernelevolve.eval import module_state

    model = _Counting()
    before = module_state.snapshot(model)
    model(torch.ones(4))
    assert sorted(module_state.changed(model, before)) == ["calls", "centre", "last"]
    check = OutputCheck(None, lambda _: [], [], [], [], [], 0.0, 0.0, 1, 0)
    names = ["calls", "last", "centre"]
    check.keep_state(model, names, [module_state.current(model, name) for name in names], SharedArena("cpu"))
    first = model(torch.ones(4))
    model(torch.ones(4))
    check._restore()
    assert torch.equal(model(torch.ones(4)), first)


class _ClassCounter(torch.nn.Module):
    calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        type(self).calls += 1
        return x * self.calls


def test_a_reference_differing_from_itself_fails_the_check_with_its_reason() -> None:
    """State no put-back reaches (a class attribute): the check's second run of the reference differs from
    the first, which used to skip the check in silence (`hacks/class_counter_timed_unchecked`)."""
    from types import SimpleNamespace

    import pytest

    from kernelevolve.eval.argument_structure import structure_of
    from kernelevolve.eval.judged_run import Verdict

    x = torch.ones(4)
    shape = SimpleNamespace(reference_model=_ClassCounter(), candidate=SimpleNamespace(where=""))
    ring = [[torch.zeros(4)]]  # the candidate's output: wrong
    check = OutputCheck(
        shape, lambda _: [x.clone()], structure_of([x]), [[None]], [0], ring, 1e-4, 1e-4, 1, 0
    )
    with pytest.raises(Verdict) as raised:
        check.check_call(0)
    assert raised.value.fields["error_name"] == "reference_not_repeatable"
