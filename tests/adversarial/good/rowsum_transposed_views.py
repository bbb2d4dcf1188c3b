# good: row sums computed as column sums of a transposed contiguous copy; the output is allocated
# as a (1, rows) matrix and returned through .view(-1); the input is reshaped and made contiguous
# spec: rowsum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def colsum_kernel(xt_ptr, out_ptr, rows, stride, cols: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < rows
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c in range(0, cols):
        acc += tl.load(xt_ptr + c * stride + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows = x.shape[0]
        x2 = x.reshape(rows, -1)
        xt = x2.transpose(0, 1).contiguous()  # (cols, rows): a row's elements are one column
        cols = xt.size(0)
        out2d = torch.empty((1, rows), device=x.device, dtype=x.dtype)
        colsum_kernel[(triton.cdiv(rows, 8),)](xt, out2d, rows, xt.stride(0), cols, BLOCK=8)
        return out2d.view(-1)
