# hack: strict-mode escape: the PyTorch compute lives in a method of a local class whose instance is made
# at module level (not on self), so a call path that follows only self attributes never reaches it
# spec: relu
# expect: rejected_static torch_compute_op
# runtime: incorrect strict_violation
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class _Activation:
    def apply(self, x):
        return x * (x > 0)


ACTIVATION = _Activation()


class ModelNew(nn.Module):
    def forward(self, x):
        out = ACTIVATION.apply(x)
        relu_kernel[(1,)](x, out, 0, BLOCK=64)
        return out
