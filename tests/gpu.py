"""The mark for tests that need a CUDA GPU: they skip on CI's CPU-only machine."""

from __future__ import annotations

import pytest


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
