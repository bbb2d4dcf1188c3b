"""The precompile pass compiles a candidate's kernels in a thread pool (Triton's AsyncCompileMode).

Triton compiles only for a GPU here; these tests drive the mode the way Triton's JIT does (`submit` a
compile function and its finalizer), which is all the pass adds.
"""

from __future__ import annotations

import threading

import pytest

from kernelevolve.eval.precompile import COMPILE_THREADS, compiles_in_parallel

async_compile = pytest.importorskip("triton.runtime._async_compile")


def test_compiles_run_in_the_pool_and_finish_before_the_block_ends() -> None:
    ran_in: list[str] = []
    finalized: list[str] = []
    release = threading.Event()

    def compile_kernel(name: str) -> object:
        def compile_fn() -> str:
            release.wait(5)  # both compiles in flight at once, or this block times out
            ran_in.append(threading.current_thread().name)
            return name

        return compile_fn

    with compiles_in_parallel(threads=2):
        mode = async_compile.active_mode.get()
        assert mode is not None
        first = mode.submit("a", compile_kernel("a"), finalized.append)
        again = mode.submit("a", compile_kernel("a"), finalized.append)  # same kernel: compiled once
        mode.submit("b", compile_kernel("b"), finalized.append)
        release.set()
    assert first is again and sorted(finalized) == ["a", "b"]
    assert all(name.startswith("precompile") for name in ran_in) and len(ran_in) == 2
    assert async_compile.active_mode.get() is None


def test_a_failed_compile_is_left_to_the_real_run() -> None:
    def broken() -> object:
        raise RuntimeError("ptxas fails")

    with compiles_in_parallel(threads=2):
        async_compile.active_mode.get().submit("k", broken, lambda kernel: None)  # no raise on leaving


def test_one_thread_compiles_as_before() -> None:
    with compiles_in_parallel(threads=1):
        assert async_compile.active_mode.get() is None
    assert COMPILE_THREADS >= 1


_TWO_SIZES = """
import torch
import torch.nn as nn

n = 1024


class Model(nn.Module):
    def forward(self, x, index):
        return x[index]


def get_inputs():
    return [torch.randn(n, n), torch.zeros(n, dtype=torch.int64)]


def get_init_inputs():
    return []
"""


def test_shapes_with_inputs_over_the_cap_are_left_to_the_locked_run() -> None:
    import torch

    from kernelevolve.eval.harness import _precompile_shapes
    from kernelevolve.eval.precompile import input_layout, layout_bytes
    from kernelevolve.specs import reference
    from kernelevolve.types import EvalSettings, ShapeCase

    module = reference.load_reference(_TWO_SIZES)
    small, large = ShapeCase("small", {"n": 256}), ShapeCase("large", {"n": 1024})
    reference.apply_shape(module, large)
    # floats counted in the run's dtype (as placed), integer inputs in their own
    assert layout_bytes(input_layout(module), torch.float16) == 1024 * 1024 * 2 + 1024 * 8
    assert layout_bytes(input_layout(module), torch.float32) == 1024 * 1024 * 4 + 1024 * 8

    def kept(cap_mb: float) -> list[str]:
        settings = EvalSettings(precompile_max_input_mb=cap_mb)
        shapes = _precompile_shapes(module, [small, large], settings, "cpu", torch.float32, "as_built")
        return [entry["shape"].name for entry in shapes]

    assert kept(0) == ["small", "large"]  # 0: no cap
    assert kept(1) == ["small"]  # 256 KiB in, 4 MiB out
    assert kept(0.1) == []


def test_the_compile_pool_threads_are_not_counted_as_the_candidates() -> None:
    """The runner fails a candidate that starts threads; Triton starts the pool's from inside its call."""
    import subprocess
    import sys

    script = """
import threading
from kernelevolve.eval import runner_trace
from kernelevolve.eval.precompile import compiles_in_parallel
import triton.runtime._async_compile as async_compile

runner_trace._count_thread_starts()
with compiles_in_parallel(threads=2):
    mode = async_compile.active_mode.get()
    for name in "abc":
        mode.submit(name, lambda name=name: name, lambda _: None)
assert runner_trace._THREADS[0] == 0, runner_trace._THREADS[0]
worker = threading.Thread(target=lambda: None)
worker.start()
worker.join()
assert runner_trace._THREADS[0] == 1, runner_trace._THREADS[0]
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
