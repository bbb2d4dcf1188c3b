"""The arena a judge shares tensors with its runner through: only what it made can cross."""

from __future__ import annotations

import pytest
import torch

from kernelevolve.eval.shared_tensors import SharedArena


def test_only_host_tensors_the_arena_made_can_be_shared() -> None:
    arena = SharedArena("cpu")
    try:
        made = arena.copy_of(torch.arange(6.0))
        assert arena.owns(made) and arena.ref(made).nbytes == made.numel() * made.element_size()
        with pytest.raises(ValueError, match="must come from this arena"):
            arena.ref(torch.arange(6.0))
        assert not arena.owns(made.clone())
    finally:
        arena.close()
    assert not arena.owns(made)


def _segment(ptr: int) -> tuple[int, int]:
    for segment in torch.cuda.memory_snapshot():
        if segment["address"] <= ptr < segment["address"] + segment["total_size"]:
            return segment["address"], segment["total_size"]
    raise LookupError(ptr)


@pytest.mark.gpu
def test_device_tensors_sit_in_segments_no_other_judge_tensor_shares() -> None:
    """CUDA IPC maps a tensor's whole allocator segment into the runner: a judge tensor made beside an
    arena one (a reference output) must not be in it, and one not made by the arena cannot be shared."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    arena = SharedArena("cuda:0")
    try:
        for elements in (1024, 1 << 19):  # the allocator's small and large pools
            secret = torch.randn(elements, device="cuda:0")
            shared = arena.copy_of(torch.randn(elements, device="cuda:0"))
            view = shared[1:]
            arena.ref(view)  # a view of an arena tensor crosses (a guard-banded input is one)
            base, size = _segment(shared.data_ptr())
            assert not base <= secret.data_ptr() < base + size
            with pytest.raises(ValueError, match="must come from this arena"):
                arena.ref(secret)
    finally:
        arena.close()
