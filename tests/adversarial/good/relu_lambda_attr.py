# good: relu launched by a lambda stored on self in __init__
# spec: relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.launch = lambda x, out, n: relu_kernel[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)

    def forward(self, x):
        out = torch.empty_like(x)
        self.launch(x, out, x.numel())
        return out
