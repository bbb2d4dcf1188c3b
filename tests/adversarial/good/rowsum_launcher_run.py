# good: row sums through a reducer object held on the model whose run() method allocates the output,
# computes the grid and launches; the block size is a constructor argument of the reducer
# spec: rowsum
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, cols: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + offs, mask=offs < cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class RowReducer:
    def __init__(self, block):
        self.block = block
        self.launches = 0

    def run(self, x):
        rows, cols = x.shape
        out = x.new_empty(rows)
        rowsum_kernel[(rows,)](x, out, x.stride(0), cols, BLOCK=self.block)
        self.launches += 1
        return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.reducer = RowReducer(block=16)

    def forward(self, x):
        return self.reducer.run(x.contiguous())
