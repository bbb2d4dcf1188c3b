"""Strict mode's copies of part of outside data after a host read (`eval/steered_copies.py`), through the
runner's trace: the gathers PyTorch's allowed copies make, and the honest copies that stay allowed."""

from __future__ import annotations

from collections.abc import Callable

import torch

from kernelevolve.eval import host_reads, runner_trace


def _flagged(call: Callable[[torch.Tensor, torch.Tensor], object]) -> list[str]:
    host_reads.watch_host_reads()
    table, index = torch.randn(6, 4), torch.tensor([4, 1])
    with runner_trace.OpTrace() as trace:
        trace.begin_call([table, index])
        call(table, index)
    return sorted(trace.compute_ops)


def _gather(table: torch.Tensor, index: torch.Tensor) -> None:
    out = table.new_empty((2, 4))
    for i in range(2):
        out[i].copy_(table[int(index[i])])


def test_rows_picked_by_host_read_indices_are_a_gather() -> None:
    assert _flagged(_gather) == ["copy_ of input data steered by a host read"]


def test_a_gather_out_of_a_copy_of_the_table_is_one_too() -> None:
    def through_clone(table: torch.Tensor, index: torch.Tensor) -> None:
        held = table.t().contiguous().t()
        _gather(held, index)

    def element_fills(table: torch.Tensor, index: torch.Tensor) -> None:
        out = table.new_empty(2)
        for i in range(2):
            out[i].fill_(table.reshape(-1)[int(index[i])])

    assert _flagged(through_clone) == ["copy_ of input data steered by a host read"]
    assert _flagged(element_fills) == ["fill_ of input data steered by a host read"]


def test_a_whole_table_copied_to_an_offset_the_index_picks_is_one_too() -> None:
    def placed(table: torch.Tensor, index: torch.Tensor) -> None:
        scratch = table.new_empty(4 * table.numel())
        for i in range(2):
            offset = (2 * i + 1) * table.numel() - int(index[i]) * 4
            scratch.as_strided(table.shape, table.stride(), offset).copy_(table)

    assert _flagged(placed) == ["copy_ of input data steered by a host read"]


def test_storage_slices_copied_as_storages_are_parts() -> None:
    def storage_rows(table: torch.Tensor, index: torch.Tensor) -> None:
        out = table.new_zeros(8)
        source, target = table.untyped_storage(), out.untyped_storage()
        for i in range(2):
            row = int(index[i])
            target[16 * i : 16 * (i + 1)].copy_(source[16 * row : 16 * (row + 1)])

    assert _flagged(storage_rows) == ["copy_ of input data steered by a host read"]


def test_whole_copies_and_copies_of_new_memory_stay_allowed() -> None:
    def honest(table: torch.Tensor, index: torch.Tensor) -> None:
        rows = int(index[0])  # a size read on the host
        table.contiguous()
        table.t().contiguous()
        table.clone()
        out = torch.zeros(rows, 4)
        out[:2].copy_(torch.ones(2, 4))  # part of memory the call made
        out[1:].clone()

    assert _flagged(honest) == []


def test_parts_copied_before_any_host_read_stay_allowed() -> None:
    def split(table: torch.Tensor, index: torch.Tensor) -> None:
        table[:, :2].contiguous()  # a fused input split before a kernel

    assert _flagged(split) == []


def test_prefixes_copied_keep_each_element_at_its_index() -> None:
    def cut(table: torch.Tensor, index: torch.Tensor) -> None:
        rows = int(index[0])
        table[:rows].clone()
        padded = table.new_zeros((8, 4))
        padded[:rows].copy_(table[:rows])

    def shifted(table: torch.Tensor, index: torch.Tensor) -> None:
        padded = table.new_zeros((8, 4))
        padded[: int(index[1])].copy_(table[1:2])  # a row moved to the front: not a prefix

    def transposed(table: torch.Tensor, index: torch.Tensor) -> None:
        table[: int(index[0])].t().contiguous()  # a prefix read in another order

    assert _flagged(cut) == []
    assert _flagged(shifted) == ["copy_ of input data steered by a host read"]
    assert _flagged(transposed) == ["clone of input data steered by a host read"]
