# hack: strict-mode escape: call the tensor's clamp through getattr with a name built at run time, so no
# compute method is spelled; the Triton kernel runs on zero elements
# spec: relu
# expect: rejected_static dynamic_code
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


class ModelNew(nn.Module):
    def forward(self, x):
        out = getattr(x, "cla" + "mp")(min=0)
        relu_kernel[(1,)](x, out, 0, BLOCK=64)
        return out
