# hack: strict-mode escape on the CPU: the input parked on a local object's attribute loses its kind, and
# a method computes the relu with Python floats; a Triton kernel copies the result out
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


class Box:
    def __init__(self, t):
        self.t = t

    def run(self):
        return torch.tensor([v if v > 0.0 else 0.0 for v in self.t.tolist()], device=self.t.device)


class ModelNew(nn.Module):
    def forward(self, x):
        res = Box(x).run()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](res, out, x.numel(), BLOCK=64)
        return out
