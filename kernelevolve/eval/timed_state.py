"""What a timed call leaves behind: the state the reference's calls move, after each timed call.

Both sides put that state back to the reference's at the timing's start before every timed call
(`timed_guard.put_back_state`, `timed_checks.OutputCheck._restore`), so a timed call's output is checkable;
what the call leaves in the module was not compared, and a candidate computed the state update on checked
calls and skipped it on timed ones (the running statistics of BatchNorm in training mode, an RNN's carried
hidden state, a step counter, a parameter moved in place: `tests/adversarial/hacks/*_timed.py`, round 14).

So each ring slot has state slots beside its output slots: after every timed call, outside its timed window
and before the completion counter shows it, the runner's own code (`record`) copies ModelNew's counterparts
of that state, read through the modules' own dictionaries as `put_back_state` reads them, into the call's
slots, and marks per state whether it did (`WRITTEN`) or found none (`MISSING`). The judge, checking a timed
call (`StateSlots.problem`), compares them with the reference's state after the same call from the same
put-back start, at the spec's tolerance, as the call's output is compared. No candidate code runs there.

A state value travels as its leaves (`leaves`): tensors as they are, Python numbers as 0-d host tensors
(int64 for bool and int, float64 for float), containers flattened in order (None and str left out).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

UNWRITTEN, MISSING, WRITTEN = -1, 0, 1  # a state's mark in its call's slot


def leaves(value: Any) -> list[Any]:
    """A state value's tensors and numbers in order (`module_state.state`'s kinds)."""
    if type(value) is dict:
        return [leaf for item in value.values() for leaf in leaves(item)]
    if type(value) in (list, tuple):
        return [leaf for item in value for leaf in leaves(item)]
    if value is None or type(value) is str:
        return []
    return [value]


def as_tensor(leaf: Any) -> Any:
    """A leaf as a tensor: a number as a 0-d host tensor (int64 for bool and int, float64 for float)."""
    import torch

    if isinstance(leaf, torch.Tensor):
        return leaf.detach()
    return torch.tensor(leaf, dtype=torch.float64 if type(leaf) is float else torch.int64)


def state_bytes(start: Sequence[Any]) -> int:
    """What one ring slot's state costs: the ring's budget counts it beside the output."""
    return sum(as_tensor(leaf).numel() * as_tensor(leaf).element_size() for v in start for leaf in leaves(v))


def record(
    model: Any, names: Sequence[str | None], start: Sequence[Any], slots: Sequence[Any], marks: Any
) -> None:
    """Runner side, after a timed call (outside its window, inside `own_work.quiet`): ModelNew's counterpart
    (`names`, None where it has none) of each moving state, whose value at the timing's start is `start`,
    copied into `slots` (one list of leaf slots per state), and each state's mark set in `marks`. A
    counterpart is read through the modules' own dictionaries and copied only where it is still exactly
    PyTorch's or Python's own of its layout (`timed_guard.held_state`: no candidate code runs here), as the
    next call's put-back would require."""
    import torch

    from kernelevolve.eval.timed_guard import held_state

    for index, (name, value, state_slots) in enumerate(zip(names, start, slots, strict=True)):
        if name is None:
            marks[index] = MISSING
            continue
        held = held_state(model, name, value, "after a timed call: the runner reads the state it left")
        with torch.no_grad():
            for slot, leaf in zip(state_slots, leaves(held), strict=True):
                if isinstance(leaf, torch.Tensor):
                    slot.copy_(leaf.reshape(slot.shape))  # a one-element count may be 0-d on one side
                else:
                    slot.fill_(leaf)
        marks[index] = WRITTEN


def compared(names: Sequence[str | None], start: Sequence[Any], moving: set[str]) -> list[str | None]:
    """Runner side: the counterparts whose state `record` reads, `names` less the integer and bool tensors
    ModelNew's own checked calls never moved (`_Runner.moving`): a batch count it keeps but does not count
    (`F.batch_norm` on a BatchNorm's buffers leaves `num_batches_tracked` alone), which nothing reads with a
    momentum. Marked as no counterpart, the exception `StateSlots.problem` makes for integer tensors."""
    import torch

    def counted(value: Any) -> bool:
        return isinstance(value, torch.Tensor) and not (value.is_floating_point() or value.is_complex())

    return [
        None if name is None or (counted(value) and name not in moving) else name
        for name, value in zip(names, start, strict=True)
    ]


class StateSlots:
    """Judge side: the state slots of every ring slot, their marks, and the comparison of one call's."""

    def __init__(self, arena: Any, names: list[str], start: list[Any], ring: int) -> None:
        import torch

        self.names = names
        self.start = start  # the judge's own copies (`OutputCheck.keep_state`'s), for layouts and kinds
        templates = [[as_tensor(leaf) for leaf in leaves(value)] for value in start]
        self.slots = [
            [[_slot(arena, leaf) for leaf in state] for state in templates]
            for _ in range(ring if names else 0)
        ]
        width = max(1, len(names))
        self.marks = arena.empty_strided((max(1, ring), width), (width, 1), torch.int8, host=True)
        self.marks.fill_(UNWRITTEN)

    def request(self, arena: Any) -> dict[str, Any]:
        """The timing request's fields: the runner's way to the slots and the marks."""
        return {
            "state_slots": [[[arena.ref(s) for s in state] for state in slot] for slot in self.slots],
            "state_marks": arena.ref(self.marks),
        }

    def problem(self, call: int, after: list[Any], atol: float, rtol: float) -> tuple[str, float] | None:
        """(what differs, its largest error) between ModelNew's state after timed call `call` and the
        reference's (`after`, the values under `names` after the reference's run of that call); None where
        they agree. A state whose reference value left its start's layout (a list that grows) is not
        compared. State ModelNew has no counterpart of fails: kept in a form the runner cannot match, it is
        never put back, so a candidate that left it alone on timed calls had it at the start every call, as
        a put-back would (`tests/adversarial/hacks/step_counter_in_list_not_counted_timed.py`); an honest
        one drifts and fails anyway wherever its output reads it. Integer and bool tensors are the exception:
        BatchNorm's `num_batches_tracked`, which a drop-in kernel often does not keep, or keeps and does not
        count (`compared`), and which neither its output nor (with a momentum) its running statistics read,
        is not compared there."""
        import math

        import torch

        from kernelevolve.eval.correctness import within_tolerance
        from kernelevolve.eval.module_state import signature

        if not self.names:
            return None
        position = call % len(self.slots)
        for index, (name, start, now) in enumerate(zip(self.names, self.start, after, strict=True)):
            if signature(now) != signature(start):
                continue
            mark = int(self.marks[position, index])
            counted = isinstance(start, torch.Tensor) and not (
                start.is_floating_point() or start.is_complex()
            )
            if mark == MISSING and counted:  # BatchNorm's `num_batches_tracked`, which kernels often drop
                continue
            if mark != WRITTEN:
                why = "ModelNew has no counterpart of it" if mark == MISSING else "not written after the call"
                return f"{name!r}: {why}", math.inf
            got = self.slots[position][index]
            expected = [as_tensor(leaf).to(slot.device) for leaf, slot in zip(leaves(now), got, strict=True)]
            within, worst = within_tolerance(expected, got, atol, rtol)
            if not within:
                return f"{name!r}: max abs error {worst:.3g}", worst
        return None


def after_call(owner: Any, names: list[str]) -> list[Any]:
    """The reference's state under `names` now (after a check's reference run), copied: the next put-back
    writes a parameter in place."""
    from kernelevolve.eval.module_state import copied, current

    return [copied(current(owner, name)) for name in names]


def _slot(arena: Any, template: Any) -> Any:
    """A slot shaped as one leaf: a tensor on the arena's device, a number in host memory; poisoned (NaN,
    or an integer type's least value) so a slot the runner never wrote does not pass for a state."""
    import torch

    if (
        template.dim() == 0
        and template.device.type == "cpu"
        and template.dtype in (torch.int64, torch.float64)
    ):
        slot = arena.empty_strided((), (), template.dtype, host=True)
    else:
        slot = arena.empty_like(template)
    if slot.is_floating_point() or slot.is_complex():
        slot.fill_(float("nan"))
    elif slot.dtype is torch.bool:
        slot.fill_(False)
    else:
        slot.fill_(torch.iinfo(slot.dtype).min)
    return slot
