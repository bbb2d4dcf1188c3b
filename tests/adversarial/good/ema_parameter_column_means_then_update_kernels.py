# good: a reference that moves an nn.Parameter in place (an EMA centre); ModelNew as a two-kernel
# pipeline: a column kernel takes the batch's column means into an fp32 intermediate and moves the
# parameter in place (each column owned by one program), then a kernel over (row block, column block)
# centres the input by the moved parameter
# spec: ema_parameter
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def column_mean_move_kernel(x_ptr, mean_ptr, centre_ptr, rows, cols, BLOCK_C: tl.constexpr):
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < cols
    acc = tl.zeros((BLOCK_C,), dtype=tl.float32)
    for r in tl.range(0, rows):
        acc += tl.load(x_ptr + r * cols + c, mask=cmask, other=0.0)
    mean = acc / rows
    tl.store(mean_ptr + c, mean, mask=cmask)
    old = tl.load(centre_ptr + c, mask=cmask, other=0.0)
    tl.store(centre_ptr + c, old * 0.9 + mean * 0.1, mask=cmask)


@triton.jit
def centre_kernel(x_ptr, centre_ptr, out_ptr, rows, cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < cols
    centre = tl.load(centre_ptr + c, mask=cmask, other=0.0)
    mask = (r[:, None] < rows) & cmask[None, :]
    x = tl.load(x_ptr + r[:, None] * cols + c[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + r[:, None] * cols + c[None, :], x - centre[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.centre = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        means = torch.empty(cols, dtype=torch.float32, device=x.device)
        column_mean_move_kernel[(triton.cdiv(cols, 32),)](x, means, self.centre, rows, cols, BLOCK_C=32)
        out = torch.empty_like(x)
        grid = (triton.cdiv(rows, 4), triton.cdiv(cols, 32))
        centre_kernel[grid](x, self.centre, out, rows, cols, BLOCK_R=4, BLOCK_C=32)
        return out
