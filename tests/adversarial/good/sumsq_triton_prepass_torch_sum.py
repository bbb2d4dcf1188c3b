# good: permissive: a Triton pre-pass squares the input, scaled by a factor read from the data
# (`.item()`, a scalar launch argument that differs per call), then PyTorch sums; twice over two halves of
# the same shape (one kernel, one argument layout, launched twice per call)
# spec: sumsq
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_square(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0) * scale
    tl.store(out_ptr + offs, x * x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        scale = 1.0 / max(x.abs().max().item(), 1e-6)
        half = x.numel() // 2
        squares = torch.empty_like(x)
        for part, out in ((x[:half], squares[:half]), (x[half:], squares[half:])):
            scaled_square[(triton.cdiv(half, 256),)](part, out, half, scale, BLOCK=256)
        return squares.sum() / (scale * scale)
