"""The arena a judge shares tensors with its runner through: only what it made can cross."""

from __future__ import annotations

import pytest
import torch

from kernelevolve.eval import shared_tensors
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


def _check_many(device: str) -> None:
    arena = SharedArena(device)
    try:
        like = torch.zeros(3, 4, device=device).t()  # a permuted dense layout, kept as `empty_like` keeps it
        ring = arena.empty_like_many(like, 5)
        single = arena.empty_like(like)
        assert len(ring) == 5
        assert all(s.shape == single.shape and s.stride() == single.stride() for s in ring)
        starts = sorted(s.data_ptr() for s in ring)
        span = like.numel() * like.element_size()
        assert all(b - a >= span for a, b in zip(starts, starts[1:], strict=False))  # disjoint
        refs = [arena.ref(s) for s in ring]  # each crosses on its own
        if device == "cpu":
            assert len({ref.path for ref in refs}) == 1  # one file for the ring
            refs[3].open().fill_(7.0)
            assert bool((ring[3] == 7.0).all()) and not bool((ring[2] == 7.0).any())
        scalars = arena.empty_like_many(torch.tensor(1.0, device=device), 2)  # a 0-dim output
        assert [s.shape for s in scalars] == [torch.Size([])] * 2
        assert scalars[0].data_ptr() != scalars[1].data_ptr()
    finally:
        arena.close()
        shared_tensors.drop_mapped()  # what `open` mapped, as a runner would


def test_a_ring_of_slots_is_views_of_one_block() -> None:
    _check_many("cpu")


@pytest.mark.gpu
def test_a_ring_of_device_slots_is_views_of_one_block() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    _check_many("cuda:0")
