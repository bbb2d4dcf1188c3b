"""The reference check waits for another thread's FX trace instead of running inside it (specs/tracing.py)."""

from __future__ import annotations

import threading

import torch
import torch.fx as fx
import torch.nn as nn

from kernelevolve.specs.reference_check import check_reference
from kernelevolve.specs.tracing import TRACING_LOCK
from kernelevolve.types import KernelSpec

# nested modules, as in KernelBench's DenseNet (L3/15), whose check failed beside a rewrite seed's trace
NESTED_REFERENCE = """
import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Sequential(nn.Linear(8, 8), nn.ReLU())

    def forward(self, x):
        return self.inner(x)

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return []
"""


class _PausedTrace(nn.Module):
    """Its forward, run by the tracer, holds the trace open until the test lets it go."""

    def __init__(self, tracing: threading.Event, release: threading.Event) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.tracing, self.release = tracing, release

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.tracing.set()
        self.release.wait(timeout=10)
        return self.linear(x)


def test_the_reference_check_waits_for_a_trace_in_another_thread() -> None:
    tracing, release = threading.Event(), threading.Event()

    def trace() -> None:
        with TRACING_LOCK:  # as the rewrite and fusion seeds do
            fx.symbolic_trace(_PausedTrace(tracing, release))

    tracer = threading.Thread(target=trace)
    tracer.start()
    assert tracing.wait(timeout=10)
    problems: list[str | None] = []
    checker = threading.Thread(
        target=lambda: problems.append(
            check_reference(KernelSpec(name="nested", reference_source=NESTED_REFERENCE))
        )
    )
    checker.start()
    checker.join(timeout=0.5)
    assert checker.is_alive(), "the check ran while Module.__call__ was patched by the trace"
    release.set()
    tracer.join(timeout=10)
    checker.join(timeout=30)
    # without the lock the check runs inside the trace: "NameError: module is not installed as a submodule"
    assert problems == [None]
