# kept out (introspection: torch._check is private PyTorch; strict also calls it compute): relu whose
# forward states its precondition with torch._check, as PyTorch's own library code does; an honest
# author writes `if not x.is_contiguous(): raise ValueError(...)` or an assert, both accepted
# spec: relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        torch._check(x.is_contiguous(), lambda: "relu_kernel reads a contiguous input")
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
        return out
