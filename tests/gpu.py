"""The mark for tests that need a CUDA GPU: they skip on CI's CPU-only machine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from kernelevolve.types import Candidate, EvalReport, KernelSpec


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


needs_cuda = pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU")


def gpu_platform_name() -> str:
    """The shipped platform config of this machine's first GPU (h200, h100 or a100; h100 for others)."""
    import torch

    name = torch.cuda.get_device_name(0).upper()
    return next((p for p in ("h200", "h100", "a100") if p.upper() in name), "h100")


def harness_reports(
    candidates: Sequence[Candidate], spec: KernelSpec, platform_name: str, strict: bool = True
) -> list[EvalReport]:
    """Each candidate through an evaluation child of the platform (correctness, then a short timing), in
    turn: what a search's evaluation gives it."""
    from kernelevolve.eval.local import LocalEvaluator
    from kernelevolve.platforms import load_platform
    from kernelevolve.types import EvalRequest, EvalSettings

    platform = load_platform(platform_name)
    settings = EvalSettings(
        correctness_trials=3, timing_trials=20, warmup_trials=3, measure_compile_baseline=False, strict=strict
    )
    with LocalEvaluator(platform, settings) as evaluator:
        return [evaluator.submit(EvalRequest(c, spec, platform.name, settings)).result() for c in candidates]


# An honest Triton tanh (int64 offsets: the GPU tests' inputs reach 2**28 elements) and its reference at
# `elements` inputs, for GPU tests of the harness itself.
TANH_CANDIDATE = """
import torch
import triton
import triton.language as tl


@triton.jit
def _tanh(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(src + offsets, mask=mask)
    e = tl.exp(-2.0 * tl.abs(x))
    y = (1.0 - e) / (1.0 + e)
    tl.store(dst + offsets, tl.where(x < 0, -y, y), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        _tanh[(triton.cdiv(x.numel(), 4096),)](x, out, x.numel(), BLOCK=4096)
        return out
"""


def tanh_reference(elements: int) -> str:
    return f"""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x)


def get_inputs():
    return [torch.randn({elements})]


def get_init_inputs():
    return []
"""
