# good: A * s with the launcher built by a functools.lru_cache'd helper keyed by (numel, block): it returns
# kernel[grid] bound to its grid, which the forward calls with the tensors; the Python float scalar
# passed straight to the kernel
# spec: kb_matrix_scalar
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(a_ptr, out_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) * s, mask=mask)


@functools.lru_cache(maxsize=None)  # noqa: UP033 (the older spelling, on purpose)
def launcher(n: int, block: int):
    return scale_kernel[(triton.cdiv(n, block),)]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        A = A.contiguous()
        out = torch.empty_like(A)
        n = A.numel()
        launcher(n, 256)(A, out, s, n, BLOCK=256)
        return out
