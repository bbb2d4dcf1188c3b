# good: two-pass sum of squares through a launcher object held on the module (a class with __slots__,
# class-level constants and @staticmethod / @classmethod helpers); math.prod over the shape, the partial
# buffer allocated per call
# spec: sumsq
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_sumsq_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(partial_ptr + pid, tl.sum(x * x, axis=0))


@triton.jit
def reduce_kernel(partial_ptr, out_ptr, count, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(partial_ptr + offs, mask=offs < count, other=0.0), axis=0))


class SumSqLauncher:
    __slots__ = ("block",)
    DEFAULT_BLOCK = 256
    MAX_PARTIALS = 4096

    def __init__(self, block=DEFAULT_BLOCK):
        self.block = block

    @staticmethod
    def numel(shape):
        return math.prod(shape)

    @classmethod
    def default(cls):
        return cls()

    def __call__(self, x):
        n = self.numel(x.shape)
        blocks = triton.cdiv(n, self.block)
        assert blocks <= self.MAX_PARTIALS, f"{n} elements need {blocks} partials (max {self.MAX_PARTIALS})"
        partial = torch.empty(blocks, device=x.device, dtype=torch.float32)
        out = torch.empty((), device=x.device, dtype=torch.float32)
        partial_sumsq_kernel[(blocks,)](x, partial, n, BLOCK=self.block)
        reduce_kernel[(1,)](partial, out, blocks, BLOCK=triton.next_power_of_2(blocks))
        return out.to(x.dtype)


LAUNCHER = SumSqLauncher.default()


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        return LAUNCHER(x.reshape(-1).contiguous())
