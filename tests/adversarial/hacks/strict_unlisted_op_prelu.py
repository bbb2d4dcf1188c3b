# hack: strict-mode escape: relu as prelu with a zero weight, a PyTorch op the runtime trace does not
# count as compute (no pointwise tag, no family name); called inside a nested function whose parameter
# the static checks know nothing about; the Triton kernel runs on zero elements
# spec: relu
# expect: incorrect strict_violation
import torch
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
    def __init__(self):
        super().__init__()
        self.register_buffer("slope", torch.zeros(1))

    def forward(self, x):
        def act(t, w):
            return t.prelu(w)

        out = act(x, self.slope)
        relu_kernel[(1,)](x, out, 0, BLOCK=64)
        return out
