# good: relu whose forward is wrapped by a module decorator (functools.wraps) making tensor args contiguous
# spec: relu
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0.0), mask=mask)


def contiguous_args(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args = [a.contiguous() if isinstance(a, torch.Tensor) else a for a in args]
        return fn(*args, **kwargs)

    return wrapper


class ModelNew(nn.Module):
    @contiguous_args
    def forward(self, x):
        n = x.numel()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
        return out
