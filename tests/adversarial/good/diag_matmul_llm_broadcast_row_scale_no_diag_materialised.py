# good: KernelBench level-1 `torch.diag(A) @ B` without materialising the diagonal matrix: out[i, j] =
# A[i] * B[i, j], a 2-D grid over (row block, column block) with `B.stride()` pointer math; LLM habits:
# `from typing import Tuple`, a `_grid` helper returning a tuple, `assert A.dim() == 1`, `.contiguous()`
# on both inputs, `torch.empty(..., device=B.device, dtype=B.dtype)`, class-level tile sizes
# spec: kb_diag_matmul
from typing import Tuple

# ruff: noqa: UP006, UP035, UP045, SIM222 -- typing and guards as LLMs write them
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def diag_scale_rows_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    N,
    M,
    stride_bn,
    stride_bm,
    stride_cn,
    stride_cm,
    BLOCK_N: tl.constexpr,
    BLOCK_M: tl.constexpr,
):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rm = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    mask = (rn[:, None] < N) & (rm[None, :] < M)
    a = tl.load(a_ptr + rn, mask=rn < N, other=0.0)
    b = tl.load(b_ptr + rn[:, None] * stride_bn + rm[None, :] * stride_bm, mask=mask, other=0.0)
    tl.store(c_ptr + rn[:, None] * stride_cn + rm[None, :] * stride_cm, a[:, None] * b, mask=mask)


class ModelNew(nn.Module):
    BLOCK_N: int = 16
    BLOCK_M: int = 32

    def __init__(self):
        super().__init__()

    def _grid(self, n: int, m: int) -> Tuple[int, int]:
        return triton.cdiv(n, self.BLOCK_N), triton.cdiv(m, self.BLOCK_M)

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        assert A.dim() == 1 and B.dim() == 2 and A.shape[0] == B.shape[0]
        A = A.contiguous()
        B = B.contiguous()
        N, M = B.shape
        C = torch.empty((N, M), device=B.device, dtype=B.dtype)
        diag_scale_rows_kernel[self._grid(N, M)](
            A,
            B,
            C,
            N,
            M,
            B.stride(0),
            B.stride(1),
            C.stride(0),
            C.stride(1),
            BLOCK_N=self.BLOCK_N,
            BLOCK_M=self.BLOCK_M,
        )
        return C
