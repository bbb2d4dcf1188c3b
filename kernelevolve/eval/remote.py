"""The judge's view of a candidate running in a runner: calls in, outputs read from judge-owned slots.

`RemoteCandidate.call` is what `correctness.check_correctness` runs instead of the candidate: the inputs
are already in the arena (guard-banded), slots shaped like the reference's outputs are poisoned (made
once, again only where the outputs' layout changes), the runner fills them, and the output handed back
is rebuilt here from the runner's JSON description. Anything the description says that does not fit the
slots (another shape or dtype, a tensor subclass, an output that shares an input's memory) comes back in
a form the judge's own checks reject, so a description can make a candidate fail but never pass.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kernelevolve.eval.runner_channel import ReplyError
from kernelevolve.eval.runner_client import Runner
from kernelevolve.eval.shared_tensors import SharedArena, dense_layout
from kernelevolve.eval.tensor_guards import POISON_BYTE
from kernelevolve.specs.reference import map_tensors

_MAX_DIMS = 16
# Checked inputs and slots at least this large are freed before timing, with the runner's mappings of them
RELEASE_BEFORE_TIMING_BYTES = 1 << 30
_MAX_DIM_SIZE = 1 << 40


class RunnerFailure(Exception):
    """The runner reported a failure of the candidate (report fields, already JSON-checked)."""

    def __init__(self, fields: dict[str, Any]) -> None:
        super().__init__(str(fields.get("feedback", "")))
        self.fields = fields


@dataclass(frozen=True)
class NotATensor:
    """An output leaf that was not exactly a torch.Tensor (a subclass, another object)."""

    type_name: str

    def __repr__(self) -> str:
        return self.type_name


def failure_fields(reply: dict[str, Any]) -> dict[str, Any]:
    """A runner's failure reply as report fields; only failure statuses are accepted from a runner. A
    checked call's named violation (`timed_guard.TimedViolation`) is the candidate's output judged wrong."""
    from kernelevolve.eval.timed_guard import CHECKS
    from kernelevolve.types import Status

    violation = reply.get("violation")
    if isinstance(violation, dict) and violation.get("check") in CHECKS:
        detail = str(violation.get("detail", ""))[:2000]
        return {"status": Status.INCORRECT, "error_name": str(violation["check"]), "feedback": detail}
    allowed = {Status.COMPILE_ERROR, Status.RUNTIME_ERROR, Status.COMPILED_ONLY, Status.REJECTED_STATIC}
    try:
        status = Status(str(reply.get("status")))
    except ValueError:
        status = Status.RUNTIME_ERROR
    if status not in allowed:
        status = Status.RUNTIME_ERROR
    return {
        "status": status,
        "error_name": str(reply.get("error_name", "runner_failure"))[:200],
        "feedback": str(reply.get("feedback", ""))[:20000],
    }


class RemoteCandidate:
    """ModelNew for one shape, built in `runner`; `call` is one forward there."""

    def __init__(
        self,
        runner: Runner,
        index: int,
        arena: SharedArena,
        deadline: float,
        where: str,
        strict: bool = False,
    ) -> None:
        self.runner = runner
        self.strict = strict
        self.index = index
        self.arena = arena
        self.deadline = deadline
        self.where = where
        self.launches = 0  # Triton launches counted in the runner over this model's checked calls
        self.replay_opaque = False  # the last call's record could not say what its launches wrote
        self.calls = 0
        self.stateful: tuple[str, ...] = ()  # the reference's buffers its calls move (`module_state`)
        # The guarded inputs of the last checked call, refilled for later checked calls of the same layout:
        # a fresh multi-GB arena block per call is an allocation in the judge and a mapping in the runner.
        self.checked_inputs: list[Any] | None = None
        # The output slots of the last checked call, poisoned again for the next of the same layout. A fresh
        # slot per call kept two outputs allocated (the runner holds one request's mappings into the next)
        # and made the runner map a multi-GB block anew at every call.
        self._slots: list[Any] = []

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        reply = self.runner.request(message, max(1.0, self.deadline - time.monotonic()))
        if reply.get("ok") is not True:
            raise RunnerFailure(failure_fields(reply))
        return reply

    def call(self, inputs: list[Any], expected: Any, seed: int, launches: str | None = None) -> Any:
        """One forward in the runner; `launches`: "off" (its Triton launches left out), "record", "stale"
        or "decoy" (`kernel_share`, `launch_replay`)."""
        from kernelevolve.eval.tensor_guards import synchronize_current_stream, tensor_leaves

        expected_leaves = tensor_leaves(expected)
        slots = self._slots_for(expected_leaves)
        for slot in slots:
            _poison(slot)
        # CUDA IPC makes a runner wait on the judge's queued work only where it first maps a block; these
        # inputs (refilled) and slots (poisoned) may be ones it already holds
        synchronize_current_stream(slots + tensor_leaves(inputs))
        self.calls += 1
        poison = _poison_byte(expected_leaves, self.calls, launches)
        refs = map_tensors(self.arena.ref, inputs)
        reply = self.request(
            {
                "op": "call",
                "index": self.index,
                "seed": seed,
                "inputs": refs,
                "slots": [self.arena.ref(slot) for slot in slots],
                "where": self.where,
                "strict": self.strict,
                "launches": launches,
                "poison": poison,
            }
        )
        self.replay_opaque = reply.get("replay_opaque") is True
        strict_violation(reply, self.strict, self.where)
        launches = reply.get("launches", 0)
        if isinstance(launches, int) and not isinstance(launches, bool) and launches > 0:
            self.launches += launches
        return rebuild_output(reply.get("leaves"), slots, tensor_leaves(inputs))

    def _slots_for(self, expected: list[Any]) -> list[Any]:
        fits = len(self._slots) == len(expected) and all(
            _slot_fits(slot, leaf) for slot, leaf in zip(self._slots, expected, strict=True)
        )
        if not fits:
            self._slots = []  # the old ones go before the new are made: multi-GB outputs
            self._slots = [self.arena.empty_like(leaf) for leaf in expected]
        return self._slots

    def end_checks(self) -> None:
        """Let go of the checked calls' inputs and output slots (the checks are over). Where they are large
        device tensors, the runner lets go of its mappings too and the judge frees its cached blocks, before
        timing allocates an input set and two output slots of its own: on an 8 GiB problem the judge held
        65 GiB into timing and the runner's output did not fit an H100 (experiments/adversarial_gpu, session
        40)."""
        from kernelevolve.eval.tensor_guards import tensor_bytes, tensor_leaves

        held = [*tensor_leaves(self.checked_inputs or []), *self._slots]
        large = tensor_bytes(held) >= RELEASE_BEFORE_TIMING_BYTES and any(t.is_cuda for t in held)
        self.checked_inputs, self._slots = None, []
        del held
        if large:
            from kernelevolve.eval.device_memory import release_device_cache

            self.request({"op": "end_checks"})
            release_device_cache()

    def state(self, names: list[str], like: list[Any]) -> list[Any | None]:
        """ModelNew's counterparts of the reference's buffers `names` (shaped as `like`), copied into
        judge slots; None where it has none."""
        slots = [self.arena.empty_like(tensor) for tensor in like]
        reply = self.request(
            {
                "op": "state",
                "index": self.index,
                "names": names,
                "slots": [self.arena.ref(slot) for slot in slots],
            }
        )
        found = reply.get("found")
        if (
            not isinstance(found, list)
            or len(found) != len(slots)
            or not all(isinstance(f, bool) for f in found)
        ):
            raise ReplyError("bad state reply")
        return [slot if present else None for slot, present in zip(slots, found, strict=True)]


# Elements of tensor data one strict call may read into Python or NumPy (`host_reads`): a few `.item()`
# scalars an honest kernel passes to its launch, never the inputs themselves, which is how host work reads
HOST_READ_LIMIT = 64


def strict_violation(reply: dict[str, Any], strict: bool, where: str) -> None:
    """Strict mode judged by what ran as well as by the source: PyTorch compute ops, host data copied
    onto the device, or more tensor data read into Python or NumPy than a few scalars during a checked
    call reject the candidate."""
    if not strict:
        return
    from kernelevolve.eval.judged_run import fail
    from kernelevolve.types import Status

    ops = reply.get("compute_ops") or []
    copies = reply.get("host_copies") or 0
    reads = reply.get("host_reads") or 0
    if not isinstance(ops, list) or not isinstance(copies, int) or not isinstance(reads, int):
        raise ReplyError("bad strict-mode trace")
    if ops:
        names = ", ".join(str(op)[:60] for op in ops[:8])
        raise fail(
            Status.INCORRECT,
            "strict_violation",
            f"strict mode: PyTorch computed in forward{where} (or, for a training spec, its backward) ({names}); "
            "the candidate's own kernels must do the work",
        )
    if copies:
        raise fail(
            Status.INCORRECT,
            "strict_violation",
            f"strict mode: host data was copied onto the device in forward{where} ({copies} copies): "
            "work done on the host does not count as the candidate's kernels",
        )
    if reads > HOST_READ_LIMIT:
        raise fail(
            Status.INCORRECT,
            "strict_violation",
            f"strict mode: forward{where} read {reads} elements of tensor data into Python or NumPy "
            f"(.numpy(), .tolist(), .item(), DLPack, apply_; at most {HOST_READ_LIMIT} per call): work done "
            "on the host does not count as the candidate's kernels",
        )


def _poison_byte(expected: list[Any], call: int, launches: str | None) -> int:
    """The byte the runner fills its allocator's freed blocks with before a call. All-ones bytes are NaN as
    floats, but True as bools and -1 as integers, both common right answers: where an output is not
    floating, every other call leaves zeros instead, so an element left unwritten is wrong on one call or
    the other. The call with launches left out ("off", whose unwritten output must not pass for right)
    takes the byte that no exact output is made of throughout (an all-False mask is a right answer too)."""
    import torch

    exact = [leaf for leaf in expected if not (leaf.is_floating_point() or leaf.is_complex())]
    if not exact:
        return POISON_BYTE
    if launches == "off":

        def all_ones(leaf: Any) -> bool:  # what all-ones bytes read as: True, or -1 (255 unsigned)
            if not leaf.numel():
                return False
            if leaf.dtype == torch.bool:
                return bool(leaf.all())
            # (flat first: a 0-dim tensor, `torch.argmax(x)`'s, has no bytes view of its own)
            return bool((leaf.reshape(-1).contiguous().view(torch.uint8) == POISON_BYTE).all())

        return 0 if any(all_ones(leaf) for leaf in exact) else POISON_BYTE
    return 0 if call % 2 == 0 else POISON_BYTE


def _slot_fits(slot: Any, leaf: Any) -> bool:
    """Whether `slot` is what `arena.empty_like(leaf)` would make: shape, dtype, device, dense strides."""
    if slot.dtype != leaf.dtype or slot.device != leaf.device:
        return False
    return (tuple(slot.shape), tuple(slot.stride())) == dense_layout(leaf)


def _poison(tensor: Any) -> None:
    """NaN (floats) or all-ones bytes: a slot the runner leaves unwritten cannot pass for an output."""
    if tensor.is_floating_point() or tensor.is_complex():
        tensor.fill_(float("nan"))
    elif tensor.dtype.is_signed or tensor.dtype.itemsize > 1:
        tensor.fill_(-1)
    else:
        tensor.fill_(POISON_BYTE)


def rebuild_output(leaves: Any, slots: list[Any], inputs: list[Any]) -> Any:
    """The candidate's output as the judge checks it, from the runner's description (pre-order leaves)."""
    if not isinstance(leaves, list) or not leaves or not all(isinstance(leaf, dict) for leaf in leaves):
        raise ReplyError("the output description is not a list of leaves")
    position = iter(leaves)
    output = _build(position, iter(slots), inputs)
    if next(position, None) is not None:
        raise ReplyError("the output description has leaves left over")
    return output


def _build(position: Iterator[Any], slots: Iterator[Any], inputs: list[Any]) -> Any:
    """The next output node (module-level: a self-calling nested function would keep the slots alive in a
    reference cycle, `tensor_guards._place`)."""
    leaf = next(position, None)
    if leaf is None:
        raise ReplyError("the output description ends early")
    kind = leaf.get("kind")
    if kind in ("list", "tuple"):
        length = leaf.get("length")
        if not isinstance(length, int) or isinstance(length, bool) or not 0 <= length <= 4096:
            raise ReplyError("bad container length")
        items = [_build(position, slots, inputs) for _ in range(length)]
        return tuple(items) if kind == "tuple" else items
    if kind == "tensor":
        return _tensor_leaf(leaf, next(slots, None), inputs)
    if kind == "value":
        value = leaf.get("value")
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise ReplyError("a plain value that is not JSON scalar")
        return value
    return NotATensor(str(leaf.get("type", "object"))[:80])


def _tensor_leaf(leaf: dict[str, Any], slot: Any, inputs: list[Any]) -> Any:
    import torch

    if leaf.get("plain") is not True:
        return NotATensor(str(leaf.get("type", "Tensor subclass"))[:80])
    alias = leaf.get("aliases_input")
    if isinstance(alias, int) and not isinstance(alias, bool) and 0 <= alias < len(inputs):
        return inputs[alias]  # the judge's own aliasing check then names it
    shape = leaf.get("shape")
    dtype = getattr(torch, str(leaf.get("dtype")), None)
    if (
        not isinstance(shape, list)
        or len(shape) > _MAX_DIMS
        or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= _MAX_DIM_SIZE for d in shape)
        or not isinstance(dtype, torch.dtype)
    ):
        raise ReplyError("a tensor description with a bad shape or dtype")
    device_type = leaf.get("device")
    if (
        slot is not None
        and tuple(shape) == tuple(slot.shape)
        and dtype == slot.dtype
        and device_type == slot.device.type
    ):
        return slot
    return torch.empty(shape, dtype=dtype, device="meta")  # the judge's metadata check names the difference
