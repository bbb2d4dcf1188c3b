# good: permissive: PyTorch copies the input, and a Triton kernel stores zeros only where it is negative
# (the elements a call changes depend on its inputs; the others keep the copy's values)
# spec: relu
# strict: false
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_negatives(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    y = tl.load(y_ptr + offs, mask=inside, other=0.0)
    tl.store(y_ptr + offs, tl.zeros_like(y), mask=inside & (y < 0))


class ModelNew(nn.Module):
    def forward(self, x):
        y = x.clone()
        zero_negatives[(triton.cdiv(y.numel(), 64),)](y, y.numel(), BLOCK=64)
        return y
