# good: softmax in three launches: per-row max, per-row sum of exponentials into fp32 stats buffers,
# then a normalising pass; every intermediate is a fresh scratch tensor of this call
# spec: softmax
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, max_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < cols, other=-float("inf"))
    tl.store(max_ptr + row, tl.max(x, axis=0))


@triton.jit
def row_sumexp_kernel(x_ptr, max_ptr, sum_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < cols, other=-float("inf"))
    m = tl.load(max_ptr + row)
    tl.store(sum_ptr + row, tl.sum(tl.exp(x - m), axis=0))


@triton.jit
def normalise_kernel(x_ptr, max_ptr, sum_ptr, out_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
    m = tl.load(max_ptr + row)
    s = tl.load(sum_ptr + row)
    tl.store(out_ptr + row * stride + offs, tl.exp(x - m) / s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        stats = torch.empty((2, rows), device=x.device, dtype=torch.float32)
        row_max, row_sum = stats[0], stats[1]
        out = torch.empty_like(x)
        grid = (rows,)
        row_max_kernel[grid](x, row_max, x.stride(0), cols, BLOCK=block)
        row_sumexp_kernel[grid](x, row_max, row_sum, x.stride(0), cols, BLOCK=block)
        normalise_kernel[grid](x, row_max, row_sum, out, x.stride(0), cols, BLOCK=block)
        return out
