# good: row sums with kernel arguments packed as a tuple and block sizes as a literal dict, launched as
# kernel[grid](*args, **meta) with a grid lambda over META; rows blocked 2-D
# spec: rowsum
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, rows, cols, stride, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    acc = tl.zeros((BLOCK_R,), dtype=tl.float32)
    for c0 in range(0, cols, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        mask = (r[:, None] < rows) & (c[None, :] < cols)
        acc += tl.sum(tl.load(x_ptr + r[:, None] * stride + c[None, :], mask=mask, other=0.0), axis=1)
    tl.store(out_ptr + r, acc, mask=r < rows)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.meta = {"BLOCK_R": 4, "BLOCK_C": 32}

    def forward(self, x):
        rows, cols = x.shape
        out = x.new_empty(rows)
        args = (x, out, rows, cols, x.stride(0))
        meta = {"BLOCK_R": 4, "BLOCK_C": 32, "num_warps": 2}
        grid = lambda META: (triton.cdiv(rows, META["BLOCK_R"]),)  # noqa: E731
        rowsum_kernel[grid](*args, **meta)
        return out
