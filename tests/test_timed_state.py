"""What a timed call leaves behind, in slots beside its output, compared by the judge (`eval/timed_state`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from kernelevolve.eval import module_state, timed_state
from kernelevolve.eval.argument_structure import structure_of
from kernelevolve.eval.judged_run import TimedShape, Verdict, ring_size
from kernelevolve.eval.shared_tensors import SharedArena
from kernelevolve.eval.timed_checks import OutputCheck
from kernelevolve.eval.timed_guard import TimedViolation


class _Stateful(torch.nn.Module):
    """A running mean moved in place, a batch counter, a step counter and a list replaced each call; the
    output reads none of them but the counter (as BatchNorm's in training mode reads none)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("running", torch.zeros(4))
        self.register_buffer("batches", torch.tensor(0))
        self.calls = 0
        self.last = [torch.zeros(4), 0.5]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.running.mul_(0.9).add_(x, alpha=0.1)
        self.batches.add_(1)
        self.calls += 1
        self.last = [x.detach().clone(), float(self.calls)]
        return x * 2.0


NAMES = ["running", "batches", "calls", "last"]


def _slots(model: torch.nn.Module, ring: int = 2) -> tuple[SharedArena, timed_state.StateSlots, list[Any]]:
    arena = SharedArena("cpu")
    start = [module_state.copied(module_state.current(model, name)) for name in NAMES]
    return arena, timed_state.StateSlots(arena, NAMES, start, ring), start


def test_leaves_flatten_containers_and_numbers_travel_as_host_tensors() -> None:
    value = {"a": [torch.ones(2), 3], "b": (None, "x", 2.5, True)}
    assert [type(leaf) for leaf in timed_state.leaves(value)] == [torch.Tensor, int, float, bool]
    assert timed_state.as_tensor(3).dtype is torch.int64
    assert timed_state.as_tensor(2.5).dtype is torch.float64
    assert timed_state.as_tensor(True).dtype is torch.int64
    assert timed_state.state_bytes([value]) == 2 * 4 + 3 * 8


def test_the_state_a_call_left_is_compared_with_the_references() -> None:
    reference, candidate = _Stateful(), _Stateful()
    _, left, start = _slots(reference)
    x = torch.arange(4.0)
    reference(x)
    candidate(x)
    timed_state.record(candidate, NAMES, start, left.slots[1], left.marks[1])
    after = timed_state.after_call(reference, NAMES)
    assert left.problem(1, after, 1e-4, 1e-4) is None
    assert left.problem(0, after, 1e-4, 1e-4) is not None  # slot 0 never written: poisoned, unmarked


@pytest.mark.parametrize("skipped", ["running", "batches", "calls", "last"])
def test_a_call_that_skipped_its_state_update_fails(skipped: str) -> None:
    """Any one state left where the put-back started it (running statistics, a batch counter, a step
    counter, a replaced list) differs from the reference's after the same call."""
    reference, candidate = _Stateful(), _Stateful()
    _, left, start = _slots(reference)
    x = torch.arange(4.0) + 1.0
    reference(x)
    candidate(x)
    owner, leaf = module_state.owner_of(candidate, skipped)
    setattr(owner, leaf, module_state.copied(start[NAMES.index(skipped)]))  # as if never moved
    timed_state.record(candidate, NAMES, start, left.slots[0], left.marks[0])
    problem = left.problem(0, timed_state.after_call(reference, NAMES), 1e-4, 1e-4)
    assert problem is not None and repr(skipped) in problem[0]


def test_missing_counterparts_fail_but_an_integer_tensor() -> None:
    """No counterpart: a state never put back nor read, which a candidate could leave alone on timed calls
    (`hacks/step_counter_in_list_not_counted_timed`), fails; an integer tensor (BatchNorm's
    `num_batches_tracked`, which kernels often drop) is the one exception."""
    reference, candidate = _Stateful(), _Stateful()
    _, left, start = _slots(reference)
    reference(torch.ones(4))
    candidate(torch.ones(4))
    after = timed_state.after_call(reference, NAMES)
    timed_state.record(candidate, ["running", None, "calls", "last"], start, left.slots[0], left.marks[0])
    assert left.problem(0, after, 1e-4, 1e-4) is None
    timed_state.record(candidate, ["running", "batches", None, "last"], start, left.slots[0], left.marks[0])
    problem = left.problem(0, after, 1e-4, 1e-4)
    assert problem is not None and "no counterpart" in problem[0]


def test_state_whose_class_a_call_swapped_is_not_read() -> None:
    """Reading it would run the subclass's code in the runner's own work (`hacks/lazy_state_copy_swapped_
    class`): the layout check refuses it first, as the next put-back does."""

    class _Swapped(torch.Tensor):
        pass

    reference, candidate = _Stateful(), _Stateful()
    _, left, start = _slots(reference)
    candidate.running.__class__ = _Swapped
    with pytest.raises(TimedViolation) as raised:
        timed_state.record(candidate, NAMES, start, left.slots[0], left.marks[0])
    assert raised.value.check == "input_type"


def test_a_timed_check_fails_a_call_whose_output_matched_but_state_did_not() -> None:
    """Through `OutputCheck.check_call`: the output right, the running mean left where it started."""
    x = torch.arange(4.0)
    reference = _Stateful()
    shape = SimpleNamespace(reference_model=reference, candidate=SimpleNamespace(where=""))
    ring = [[(x * 2.0).clone()]]
    check = OutputCheck(
        shape, lambda _: [x.clone()], structure_of([x]), [[None]], [0, 0], ring, 1e-4, 1e-4, 1, 0
    )
    start = [module_state.copied(module_state.current(reference, name)) for name in NAMES]
    left = check.keep_state(reference, NAMES, start, SharedArena("cpu"))
    honest = _Stateful()
    honest(x)
    timed_state.record(honest, NAMES, start, left.slots[0], left.marks[0])
    check.check_call(0)  # output and state both right
    lazy = _Stateful()
    lazy(x)
    lazy.running.zero_()  # the update skipped
    timed_state.record(lazy, NAMES, start, left.slots[0], left.marks[0])
    with pytest.raises(Verdict) as raised:
        check.check_call(1)
    assert raised.value.fields["error_name"] == "timed_state_mismatch"


def test_the_ring_budget_counts_the_state() -> None:
    shape = TimedShape(None, None, output_bytes=1 << 20)  # type: ignore[arg-type]
    assert ring_size(shape, "cpu", 1000) == 64
    assert ring_size(shape, "cpu", 1000, state_bytes=1 << 20) == 32
    assert ring_size(shape, "cuda", 1000, state_bytes=1 << 20) == 128  # every call where outputs are small
    assert ring_size(shape, "cuda", 110) == 110
    huge = TimedShape(None, None, output_bytes=8 << 30)  # type: ignore[arg-type]
    assert ring_size(huge, "cuda", 110) == 2  # the least: the last finished call's slot is never written


def test_an_integer_tensor_the_candidate_never_counted_is_not_compared() -> None:
    """`F.batch_norm` on a BatchNorm's buffers leaves `num_batches_tracked` at 0 on every call (honest, nothing
    reads it with a momentum: `tests/test_model_mode.py`); one its checked calls moved is compared, so a count
    kept on checked calls and skipped on timed ones fails."""
    start = [torch.zeros(4), torch.tensor(3), 2]
    names = ["running", "batches", "calls"]
    assert timed_state.compared(names, start, {"running", "calls"}) == ["running", None, "calls"]
    assert timed_state.compared(names, start, {"batches"}) == names
    assert timed_state.compared([None, "batches", "calls"], start, set()) == [None, None, "calls"]


class _OtherForms(torch.nn.Module):
    """`_Stateful`'s state in other forms a drop-in kernel keeps: the batch count as a Python int, the step
    counter as a 0-d int64 buffer, the list as a tuple."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("running", torch.zeros(4))
        self.register_buffer("step", torch.zeros((), dtype=torch.int64))
        self.seen = 0
        self.last = (torch.zeros(4), 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.running.mul_(0.9).add_(x, alpha=0.1)
        self.seen += 1
        self.step.add_(1)
        self.last = (x.detach().clone(), float(self.step))
        return x * 2.0


def test_state_kept_in_another_form_is_put_back_and_compared() -> None:
    """A number's counterpart may be a 0-d tensor of its kind and the other way round, a list's a tuple
    (`module_state.loose`): found, put back in the candidate's own form and compared leaf by leaf; one that
    skipped its update still fails."""
    from kernelevolve.eval.timed_guard import put_back_state

    reference, candidate = _Stateful(), _OtherForms()
    _, left, start = _slots(reference)
    wanted = [(name, module_state.signature(value)) for name, value in zip(NAMES, start, strict=True)]
    names = module_state.counterpart_names(candidate, wanted, frozenset({"seen"}))
    assert names == ["running", "step", "seen", "last"]  # a buffer first, then what its calls moved
    candidate(torch.ones(4))
    put_back_state(candidate, names, start)  # to the start the reference has
    assert candidate.step.dtype is torch.int64 and int(candidate.step) == 0
    assert type(candidate.seen) is int and candidate.seen == 0
    assert type(candidate.last) is tuple and float(candidate.last[1]) == 0.5
    x = torch.arange(4.0)
    reference(x)
    candidate(x)
    timed_state.record(candidate, names, start, left.slots[0], left.marks[0])
    after = timed_state.after_call(reference, NAMES)
    assert left.problem(0, after, 1e-4, 1e-4) is None
    put_back_state(candidate, names, start)
    candidate(x)
    candidate.step.sub_(1)  # a step not counted
    timed_state.record(candidate, names, start, left.slots[1], left.marks[1])
    problem = left.problem(1, after, 1e-4, 1e-4)
    assert problem is not None and "'batches'" in problem[0]


class _OneElementCounts(torch.nn.Module):
    """`_Stateful`'s two counts kept as one-element `(1,)` int64 buffers (the batch count's name kept)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("running", torch.zeros(4))
        self.register_buffer("batches", torch.zeros(1, dtype=torch.int64))
        self.register_buffer("step", torch.zeros(1, dtype=torch.int64))
        self.last = [torch.zeros(4), 0.5]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.running.mul_(0.9).add_(x, alpha=0.1)
        self.batches.add_(1)
        self.step.add_(1)
        self.last = [x.detach().clone(), float(self.step)]
        return x * 2.0


def test_a_count_kept_in_a_one_element_tensor_is_put_back_and_compared() -> None:
    """A count's counterpart may be a `(1,)` tensor, for the reference's int and for its 0-d tensor alike
    (`module_state.loose`): found, put back reshaped and compared; one that skipped its step still fails."""
    from kernelevolve.eval.timed_guard import put_back_state

    reference, candidate = _Stateful(), _OneElementCounts()
    _, left, start = _slots(reference)
    wanted = [(name, module_state.signature(value)) for name, value in zip(NAMES, start, strict=True)]
    names = module_state.counterpart_names(candidate, wanted)
    assert names == ["running", "batches", "step", "last"]
    candidate(torch.ones(4))
    put_back_state(candidate, names, start)
    assert candidate.batches.shape == (1,) and int(candidate.batches) == 0 and int(candidate.step) == 0
    x = torch.arange(4.0)
    reference(x)
    candidate(x)
    timed_state.record(candidate, names, start, left.slots[0], left.marks[0])
    after = timed_state.after_call(reference, NAMES)
    assert left.problem(0, after, 1e-4, 1e-4) is None
    put_back_state(candidate, names, start)
    candidate(x)
    candidate.step.sub_(1)  # a step not counted
    timed_state.record(candidate, names, start, left.slots[1], left.marks[1])
    problem = left.problem(1, after, 1e-4, 1e-4)
    assert problem is not None and "'calls'" in problem[0]


class _BroadcastShapedRunning(_Stateful):
    """`_Stateful` with its running mean kept as a `(1, 4, 1)` buffer, shaped to broadcast, under its own name."""

    def __init__(self) -> None:
        super().__init__()
        del self.running
        self.register_buffer("mean_nc1", torch.zeros(1, 4, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.mean_nc1.mul_(0.9).add_(x.view(1, 4, 1), alpha=0.1)
        self.batches.add_(1)
        self.calls += 1
        self.last = [x.detach().clone(), float(self.calls)]
        return x * 2.0


def test_a_running_statistic_kept_with_size_one_dimensions_is_put_back_and_compared() -> None:
    """A `(1, 4, 1)` buffer holds the reference's `(4,)` running mean's elements in their order
    (`module_state.loose`): found, put back reshaped and compared; one left unmoved still fails."""
    from kernelevolve.eval.timed_guard import put_back_state

    reference, candidate = _Stateful(), _BroadcastShapedRunning()
    _, left, start = _slots(reference)
    wanted = [(name, module_state.signature(value)) for name, value in zip(NAMES, start, strict=True)]
    names = module_state.counterpart_names(candidate, wanted)
    assert names == ["mean_nc1", "batches", "calls", "last"]
    candidate(torch.ones(4))
    put_back_state(candidate, names, start)
    assert candidate.mean_nc1.shape == (1, 4, 1) and not candidate.mean_nc1.any()
    x = torch.arange(4.0)
    reference(x)
    candidate(x)
    timed_state.record(candidate, names, start, left.slots[0], left.marks[0])
    after = timed_state.after_call(reference, NAMES)
    assert left.problem(0, after, 1e-4, 1e-4) is None
    put_back_state(candidate, names, start)
    candidate(x)
    candidate.mean_nc1.zero_()  # the running mean not moved
    timed_state.record(candidate, names, start, left.slots[1], left.marks[1])
    problem = left.problem(1, after, 1e-4, 1e-4)
    assert problem is not None and "'running'" in problem[0]


def test_shapes_that_differ_by_more_than_size_one_dimensions_do_not_match() -> None:
    assert module_state.loose((1, 4, 1)) == module_state.loose((4,))
    assert module_state.loose(("tensor", (1, 3))) == module_state.loose(("tensor", (3,)))
    assert module_state.loose((2, 2)) != module_state.loose((4,))
    assert module_state.loose((4, 1)) != module_state.loose(("tensor", (4,)))
