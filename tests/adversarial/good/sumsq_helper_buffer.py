# good: two-stage sum of squares: a @triton.jit device helper, a host launch helper, and a partial-sum
# scratch buffer pre-allocated in __init__ (rewritten by every call, never returned)
# spec: sumsq
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def _square(v):
    return v * v


@triton.jit
def partial_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(_square(x), axis=0))


@triton.jit
def finish_kernel(partial_ptr, out_ptr, count, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.load(partial_ptr + offs, mask=offs < count, other=0.0)
    tl.store(out_ptr, tl.sum(p, axis=0))


def _sum_of_squares(x, partial, out):
    n = x.numel()
    blocks = triton.cdiv(n, BLOCK)
    partial_kernel[(blocks,)](x, partial, n, BLOCK=BLOCK)
    finish_kernel[(1,)](partial, out, blocks, BLOCK=triton.next_power_of_2(blocks))
    return out


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("partial", torch.empty(triton.cdiv(n, BLOCK)), persistent=False)

    def forward(self, x):
        out = torch.empty((), device=x.device, dtype=x.dtype)
        return _sum_of_squares(x.contiguous(), self.partial, out)
