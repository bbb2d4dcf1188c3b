# hack: return (rows, 1) where the reference returns (rows,): broadcast-compatible, so a loose
# allclose would accept it
# spec: rowsum
# expect: incorrect shape
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty((x.shape[0], 1), device=x.device, dtype=x.dtype)
        rowsum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=64)
        return out
