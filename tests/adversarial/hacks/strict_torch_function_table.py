# hack: strict-mode escape: torch.relu stored in a module-level table and called through a lookup, so the
# call site names no PyTorch function; the Triton kernel runs on zero elements
# spec: relu
# expect: rejected_static torch_compute_op
# runtime: incorrect strict_violation
import torch
import torch.nn as nn
import triton
import triton.language as tl

OPS = {"act": torch.relu}


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = OPS["act"](x)
        relu_kernel[(1,)](x, out, 0, BLOCK=64)
        return out
