# hack: strict-mode escape on the CPU: Tensor.apply_ runs a Python function on every element (no ATen op
# is dispatched, so the runtime trace sees nothing), called through a lambda whose parameter has no known
# kind; a Triton kernel copies the result out
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
    def forward(self, x):
        res = x.cpu().clone()
        (lambda t: t.apply_(lambda v: v if v > 0.0 else 0.0))(res)
        res = res.to(x.device)
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](res, out, x.numel(), BLOCK=64)
        return out
