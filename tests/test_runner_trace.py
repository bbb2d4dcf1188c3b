"""The runner's traces of what a candidate does to PyTorch's dispatcher and which ops count as compute."""

from __future__ import annotations

import pytest
import torch

from kernelevolve.eval import runner_trace, strict_ops


def test_custom_op_named_like_a_copy_computes() -> None:
    lib = torch.library.Library("ketest_trace", "DEF")
    lib.define("clone(Tensor x) -> Tensor")
    x = torch.ones(2)
    assert strict_ops.computes(torch.ops.ketest_trace.clone.default, (x,), {})
    assert not strict_ops.computes(torch.ops.aten.clone.default, (x,), {})


def test_registrations_by_the_caller_are_recorded_pytorchs_own_are_not() -> None:
    runner_trace._count_dispatcher_registrations()
    runner_trace._REGISTRATIONS.clear()
    try:
        torch.func.vmap(torch.sin)(torch.randn(3))  # PyTorch registers its batching rules lazily
        assert runner_trace._REGISTRATIONS == []
        lib = torch.library.Library("aten", "IMPL")
        lib.impl("clone", lambda t, memory_format=None: t.new_ones(t.shape), "Meta")
        assert runner_trace._REGISTRATIONS == ["impl(clone)"]
        del lib
    finally:
        runner_trace._REGISTRATIONS.clear()


class _Sink:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


def test_serializing_a_tensor_counts_as_reading_it() -> None:
    from kernelevolve.eval import host_reads

    host_reads.watch_host_reads()
    t = torch.randn(100)
    for legacy in (False, True):
        with runner_trace.OpTrace() as trace:
            torch.serialization.save(t, _Sink(), _use_new_zipfile_serialization=not legacy)
        assert trace.host_reads == t.nbytes
    with runner_trace.OpTrace() as trace:
        t.untyped_storage().__reduce__()
    assert trace.host_reads == t.nbytes


def test_tensors_sharing_memory_with_numpy_count_whenever_touched() -> None:
    import numpy as np

    from kernelevolve.eval import host_reads

    host_reads.watch_host_reads()
    scratch = torch.empty(100)
    view = scratch.numpy()  # made outside any call: nothing read yet
    buffer = np.empty(100, dtype=np.float32)
    x = torch.randn(100)
    with runner_trace.OpTrace() as trace:
        scratch.copy_(x)  # NumPy reads this through `view` with no tensor method
    assert trace.host_reads == 100
    with runner_trace.OpTrace() as trace:
        torch.as_tensor(buffer).copy_(x)
    assert trace.host_reads == 200  # made during the call (100), then written (100)
    with runner_trace.OpTrace() as trace:
        torch.as_tensor([1.0, 2.0]).add_(1.0)  # a copy of Python values shares nothing
        with host_reads.harness_memory():
            torch.frombuffer(bytearray(400), dtype=torch.float32)
    assert trace.host_reads == 0
    del view


def test_cute_programs_are_counted_and_left_out_like_launches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every CuTe DSL program run goes through `JitExecutor.run_compiled_program`: counted as a launch, and
    not run in the "off" call (a CuTe candidate computing in PyTorch with its kernels idle passed before,
    `experiments/adversarial_gpu/redteam19.md`). The method is replaced by a stand-in: CPUs run no CuTe."""
    jit_executor = pytest.importorskip("cutlass.base_dsl.jit_executor")
    ran: list[list[int]] = []
    monkeypatch.setattr(
        jit_executor.JitExecutor, "run_compiled_program", lambda self, exe_args: ran.append(exe_args)
    )
    runner_trace._count_launches("cute")
    runner_trace._count_launches("cute")  # wrapped once: a second call counts nothing twice
    executor = object.__new__(jit_executor.JitExecutor)
    before = runner_trace._LAUNCHES[0]
    executor.run_compiled_program([1])
    assert ran == [[1]] and runner_trace._LAUNCHES[0] == before + 1
    runner_trace.set_launch_mode("off")
    try:
        assert executor.run_compiled_program([2]) is None
    finally:
        runner_trace.set_launch_mode(None)
    assert ran == [[1]] and runner_trace._LAUNCHES[0] == before + 1
