# hack: the grid covers only the first half of the output; the rest is whatever torch.empty held
# spec: relu
# expect: incorrect nonfinite|mismatch
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
        out = torch.empty_like(x)
        half = x.numel() // 2
        relu_kernel[(triton.cdiv(half, 64),)](x, out, half, BLOCK=64)
        return out
