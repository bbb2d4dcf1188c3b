# hack: import the reference module by name and run its Model
# spec: relu
# expect: rejected_static reference_access
# runtime: compile_error ModuleNotFoundError
import torch
import torch.nn as nn
import triton
import triton.language as tl
from reference import Model as Reference


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.reference = Reference()

    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)  # decoy
        return self.reference(x)
