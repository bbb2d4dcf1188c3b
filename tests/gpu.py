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
