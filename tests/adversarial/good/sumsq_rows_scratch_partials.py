# good: sum of squares of the input flattened with reshape(-1) and read as rows of a fixed width, a
# one-program-per-row first pass and a second pass over the partials; the partial buffer is a scratch
# attribute reallocated only when the row count or device changes
# spec: sumsq
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sumsq_kernel(x_ptr, partial_ptr, stride, cols, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    idx = row * stride + offs
    x = tl.load(x_ptr + idx, mask=(offs < cols) & (idx < n), other=0.0)
    tl.store(partial_ptr + row, tl.sum(x * x, axis=0))


@triton.jit
def total_kernel(partial_ptr, out_ptr, rows, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(partial_ptr + offs, mask=offs < rows, other=0.0), axis=0))


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n
        self.cols = 128
        self._partial = None

    def _scratch(self, rows, device):
        if self._partial is None or self._partial.shape[0] != rows or self._partial.device != device:
            self._partial = torch.empty(rows, device=device, dtype=torch.float32)
        return self._partial

    def forward(self, x):
        flat = x.reshape(-1)
        n = flat.numel()
        rows = triton.cdiv(n, self.cols)
        partial = self._scratch(rows, x.device)
        row_sumsq_kernel[(rows,)](flat, partial, self.cols, self.cols, n, BLOCK=self.cols)
        out = torch.empty((), device=x.device, dtype=x.dtype)
        total_kernel[(1,)](partial, out, rows, BLOCK=triton.next_power_of_2(rows))
        return out
