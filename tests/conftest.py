"""Shared fixtures: the CPU platform, fast harness settings, a tiny spec and Triton kernels for it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from kernelevolve.platforms import Platform, load_platform
from kernelevolve.types import EvalSettings, KernelSpec, ShapeCase

if TYPE_CHECKING:
    from kernelevolve.eval.local import LocalEvaluator


def _interpret_triton_without_a_gpu() -> None:
    """Triton decides at import whether its own helpers (tl.cdiv, ...) are interpreted, so this is set
    once, before any test module can import it: interpreted on a CPU-only machine (CI), compiled where a
    GPU is present (one stray TRITON_INTERPRET there turns every GPU test into an interpreter run)."""
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
        return
    # On a GPU, import Triton now, compiled: a module fixture that sets TRITON_INTERPRET for its CPU
    # tests (test_harness) must not decide the mode when it happens to be the first to import Triton.
    with contextlib.suppress(ImportError):
        import triton.language  # noqa: F401


_interpret_triton_without_a_gpu()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--shard",
        default=None,
        help="K/N: run only the K-th of N fixed parts of the selected tests (a GPU preflight split over device "
        "calls that each end inside their time limit; the parts are the same on every machine)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    shard = config.getoption("--shard")
    if not shard:
        return
    try:
        part, parts = (int(n) for n in shard.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard takes K/N (e.g. 1/2), got {shard!r}") from None
    if not 1 <= part <= parts:
        raise pytest.UsageError(f"--shard {shard}: K must be between 1 and N")
    kept = set(shard_of([item.nodeid for item in items], part, parts))
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in kept])
    items[:] = [item for item in items if item.nodeid in kept]


def shard_of(test_ids: list[str], part: int, parts: int) -> list[str]:
    """The K-th of N parts of `test_ids`, dealt round-robin in sorted order: each part gets a share of every
    file, slow files included, and the same ids give the same parts on every machine."""
    return [test_id for n, test_id in enumerate(sorted(test_ids)) if n % parts == part - 1]


ADD_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return x + y


n = 64


def get_inputs():
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
"""

_ADD_KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask={load_mask})
    y = tl.load(y_ptr + offs, mask={load_mask})
    tl.store(out_ptr + offs, {result}, mask={store_mask})
{extra_store}

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
{prologue}        out = {alloc}
        n = x.numel()
        add_kernel[(triton.cdiv(n, 32),)](x, y, out, n, BLOCK=32)
        return out
"""


def add_kernel_source(
    result: str = "x + y",
    load_mask: str = "mask",
    store_mask: str = "mask",
    alloc: str = "torch.empty_like(x)",
    extra_store: str = "",
    prologue: str = "",
) -> str:
    """A Triton vector-add candidate for ADD_REFERENCE; arguments inject the bug under test."""
    return _ADD_KERNEL.format(
        result=result,
        load_mask=load_mask,
        store_mask=store_mask,
        alloc=alloc,
        extra_store=f"    {extra_store}\n" if extra_store else "",
        prologue="".join(f"        {line}\n" for line in prologue.splitlines() if line.strip()),
    )


@pytest.fixture(scope="session")
def cpu_platform() -> Platform:
    return load_platform("cpu")


@pytest.fixture(scope="session")
def fast_settings() -> EvalSettings:
    return EvalSettings(
        correctness_trials=2,
        timing_trials=3,
        warmup_trials=1,
        timeout_s=60.0,
        measure_compile_baseline=False,
    )


@pytest.fixture(scope="session")
def cpu_evaluator(cpu_platform: Platform) -> Iterator[LocalEvaluator]:
    """One CPU evaluator for a test process, for tests that only submit candidates and read the reports
    (each request carries its own settings, and every candidate still runs in a fresh runner): its child
    and the runners' zygote start once, not once a test. Tests about the evaluator's own processes
    (crashes, restarts, timeouts, its logs) make their own."""
    from kernelevolve.eval.local import LocalEvaluator

    with LocalEvaluator(cpu_platform, EvalSettings()) as evaluator:
        yield evaluator


@pytest.fixture(scope="session")
def add_spec() -> KernelSpec:
    """x + y at two tiny shapes, one not a multiple of the kernels' block size."""
    return KernelSpec(
        name="tiny_add",
        reference_source=ADD_REFERENCE,
        shapes=(ShapeCase("n64", {"n": 64}), ShapeCase("n100", {"n": 100})),
    )


@pytest.fixture(scope="session")
def add_kernel() -> Callable[..., str]:
    return add_kernel_source


def library_calling_kernel_source() -> str:
    """The add kernel whose forward also hands work to cuBLAS: permissive-only (uses a library)."""
    return add_kernel_source().replace("return out", "return torch.mm(out[:1, None], out[None, :1])[0]")


@pytest.fixture(scope="session")
def library_kernel() -> Callable[[], str]:
    return library_calling_kernel_source


@pytest.fixture
def interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels run under Triton's interpreter; skipped where Triton was imported compiled (a GPU machine)."""
    triton = pytest.importorskip("triton")
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(triton.language.standard.cdiv, InterpretedFunction):
        pytest.skip("triton was imported in compiled mode (TRITON_INTERPRET unset): these tests need it set")
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.fixture(autouse=True)
def _no_reference_outputs_across_tests() -> None:
    """Each test starts with no reference outputs kept by an earlier one in this process."""
    from kernelevolve.eval.reference_outputs import KEPT

    KEPT.clear()
