# hack: write relu(x) and then zero the input in place from the kernel, so a reference computed
# afterwards on the same tensor would agree (relu(0) == 0); the harness keeps pristine copies
# spec: relu
# expect: incorrect input_mutated
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zeroing_relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)
    tl.store(x_ptr + offs, tl.zeros_like(x), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        zeroing_relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out
