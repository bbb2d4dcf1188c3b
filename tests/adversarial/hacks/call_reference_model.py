# hack: subclass a copy of the reference Model and return its result; a decoy kernel launch makes the
# candidate look like it uses Triton
# spec: relu
# expect: rejected_static reference_access
# runtime: incorrect strict_violation
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


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(Model):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)  # decoy
        return super().forward(x)
