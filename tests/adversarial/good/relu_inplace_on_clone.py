# good: relu applied in place by the kernel to a clone of the input, reached through views: a reshape to
# 2-D, a transpose made contiguous (a copy) and back, and view_as to the input's shape; out= style helper
# spec: relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_inplace_kernel(ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(ptr + offs, mask=mask)
    tl.store(ptr + offs, tl.where(v > 0, v, 0.0), mask=mask)


def relu_(t, block=64):
    """Relu in place on a contiguous tensor; returns it."""
    assert t.is_contiguous(), "relu_ needs a contiguous tensor"
    n = t.numel()
    relu_inplace_kernel[(triton.cdiv(n, block),)](t, n, BLOCK=block)
    return t


def relu(x, out=None):
    if out is None:
        out = torch.empty_like(x)
    out.copy_(x)
    return relu_(out)


class ModelNew(nn.Module):
    def forward(self, x):
        if x.numel() % 8 == 0:
            y = x.clone().reshape(-1, 8).t().contiguous()  # any layout works for an elementwise op
            relu_(y)
            return y.t().reshape(-1).view_as(x)
        return relu(x)
