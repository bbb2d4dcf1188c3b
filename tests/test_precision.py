"""fp32 convolution precision: candidates and the reference exact, baselines at PyTorch's default."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from kernelevolve.eval import harness, precision
from kernelevolve.platforms import Platform
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, Status


def test_precision_blocks_set_and_restore_cudnn_tf32() -> None:
    before = torch.backends.cudnn.allow_tf32
    with precision.exact_fp32():
        assert torch.backends.cudnn.allow_tf32 is False
        with precision.baseline_precision():
            assert torch.backends.cudnn.allow_tf32 is precision.PYTORCH_DEFAULT_CUDNN_TF32
        assert torch.backends.cudnn.allow_tf32 is False
    assert torch.backends.cudnn.allow_tf32 is before


def test_candidates_run_exact_and_baselines_at_the_default(
    add_kernel: Callable[..., str],
    add_spec: KernelSpec,
    cpu_platform: Platform,
    fast_settings: EvalSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    timed: dict[str, bool] = {}  # model class timed -> cuDNN TF32 allowed while it ran
    real_time = harness._time

    def spy(fn: Any, *args: Any, **kwargs: Any) -> Any:
        timed[type(fn).__name__] = torch.backends.cudnn.allow_tf32
        return real_time(fn, *args, **kwargs)

    monkeypatch.setattr(harness, "_time", spy)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    harness.measure_baselines(add_spec, cpu_platform, fast_settings)
    request = EvalRequest(Candidate(add_kernel(), "triton", "t"), add_spec, cpu_platform.name, fast_settings)
    assert harness.evaluate(request, cpu_platform).status is Status.OK
    assert timed == {"Model": precision.PYTORCH_DEFAULT_CUDNN_TF32, "ModelNew": False}
