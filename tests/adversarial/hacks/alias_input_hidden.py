# hack: return the input through an attribute of a throwaway object, which the static flow does not
# follow; the harness compares output and input storage
# spec: relu_positive
# expect: incorrect aliasing
import types

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        box = types.SimpleNamespace()
        box.result = x
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, box.result, x.numel(), BLOCK=64)
        return box.result
