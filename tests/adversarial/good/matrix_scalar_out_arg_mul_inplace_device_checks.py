# good: KernelBench level-1 matrix * scalar with LLM habits: `torch.cuda.current_device()` guarded by
# `torch.cuda.is_available()`, a `torch.device` comparison, an `out=` argument filled by a copy kernel then
# scaled in place by a second kernel (`.mul_()`-style in-place on the fresh output), a class-level BLOCK
# constant, `if x.numel() == 0: return x`
# spec: kb_matrix_scalar
from typing import Optional

# ruff: noqa: UP006, UP035, UP045, SIM222 -- typing and guards as LLMs write them
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def scale_inplace_kernel(x_ptr, s, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, x * s, mask=mask)


def _check_device(t: torch.Tensor) -> None:
    """Make sure the tensor sits on the device we launch on (the current CUDA device when there is one)."""
    if torch.cuda.is_available() and t.is_cuda:
        expected = torch.device("cuda", torch.cuda.current_device())
        assert t.device == expected, f"tensor on {t.device}, expected {expected}"


class ModelNew(nn.Module):
    BLOCK_SIZE = 1024

    def __init__(self):
        super().__init__()

    def _scale(self, A: torch.Tensor, s: float, out: Optional[torch.Tensor] = None) -> torch.Tensor:
        _check_device(A)
        A = A.contiguous()
        if out is None:
            out = torch.empty_like(A)
        n = A.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
        copy_kernel[grid](A, out, n, BLOCK_SIZE=self.BLOCK_SIZE)
        scale_inplace_kernel[grid](out, float(s), n, BLOCK_SIZE=self.BLOCK_SIZE)
        return out

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        if A.numel() == 0:
            return A
        out = torch.empty(A.shape, device=A.device, dtype=A.dtype)
        return self._scale(A, s, out=out)
