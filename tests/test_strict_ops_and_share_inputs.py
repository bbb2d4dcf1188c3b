"""Two run-time rules honest kernels met: strict mode's counter step (BatchNorm's num_batches_tracked) and
the stale-replay call's inputs where a spec's input shapes change with the seed (jagged batches)."""

from __future__ import annotations

import pytest

from kernelevolve.eval import strict_ops

torch = pytest.importorskip("torch")


def _computes(call: str, *args: object) -> bool:
    return strict_ops.computes(getattr(torch.ops.aten, call).Tensor, args, {})


def test_only_a_python_int_added_to_a_0d_integer_tensor_is_a_counter_step() -> None:
    counter = torch.tensor(3, dtype=torch.int64)
    assert not _computes("add_", counter, 1)
    assert _computes("add_", torch.tensor(3.0), 1)  # a float scalar: compute
    assert _computes("add_", torch.tensor([1, 2]), 1)  # not 0-d
    assert _computes("add_", counter, torch.tensor(1))  # a tensor step carries data
    assert _computes("add_", counter, 1.5)  # not an int
    assert _computes("add_", counter, True)  # a bool is an int only by inheritance
    assert _computes("add_", torch.tensor(True), 1)
    assert _computes("mul_", counter, 2)
