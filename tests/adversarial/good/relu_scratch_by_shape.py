# good: a scratch buffer allocated lazily and cached by shape on self (fresh allocation stored, never
# returned), plus a staging copy through it; the output is fresh on every call
# spec: relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


@triton.jit
def relu_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(src_ptr + offs, mask=mask)
    tl.store(dst_ptr + offs, tl.where(v > 0, v, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._scratch = {}

    def _buffer(self, x):
        key = (tuple(x.shape), x.dtype, x.device)
        if key not in self._scratch:
            self._scratch[key] = torch.empty_like(x)
        return self._scratch[key]

    def forward(self, x):
        n = x.numel()
        grid = (triton.cdiv(n, 64),)
        staging = self._buffer(x)
        copy_kernel[grid](x, staging, n, BLOCK=64)
        out = torch.empty_like(x)
        relu_kernel[grid](staging, out, n, BLOCK=64)
        return out
