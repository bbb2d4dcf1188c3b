# kernelevolve-template: name=rmsnorm_rowwise family=rmsnorm backend=triton
"""RMSNorm over the last dimension with a learned weight, one pass over memory.

Each program holds whole rows in registers: mean of squares, reciprocal root, scale by the
weight; one read and one write per element. Rows longer than MAX_FUSED_SIZE take a two-pass
loop (sum of squares, then normalise).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Longest row kept entirely in registers.
MAX_FUSED_SIZE = 16384  # tune: 4096, 8192, 16384, 32768
# 0 picks from the row length: about 512 elements per warp, 16 warps at most.
NUM_WARPS = 0  # tune: 0, 1, 2, 4, 8, 16
# 0 picks from the row length: short rows are packed until a program holds ~2048 elements.
ROWS_PER_PROGRAM = 0  # tune: 0, 1, 2, 4, 8
# Chunk length of the two-pass loop used for rows longer than MAX_FUSED_SIZE.
LOOP_BLOCK_SIZE = 4096  # tune: 1024, 2048, 4096, 8192
LOOP_NUM_WARPS = 8  # tune: 4, 8, 16


@triton.jit
def _rmsnorm_fused_kernel(
    x_ptr, w_ptr, y_ptr, n_rows, n_cols, eps, BLOCK_SIZE: tl.constexpr, ROWS: tl.constexpr
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    y = x * inv_rms[:, None] * w[None, :]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_looped_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK_SIZE)
    sq = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        c = start + cols
        x = tl.load(x_ptr + base + c, mask=c < n_cols, other=0.0).to(tl.float32)
        sq += x * x
    inv_rms = tl.rsqrt(tl.sum(sq, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        c = start + cols
        ok = c < n_cols
        x = tl.load(x_ptr + base + c, mask=ok, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=ok, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + c, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        y = torch.empty_like(x)
        if x.numel() == 0:
            return y
        n_rows = x.numel() // n_cols
        block = triton.next_power_of_2(n_cols)
        if block <= MAX_FUSED_SIZE:
            rows = ROWS_PER_PROGRAM or max(1, min(8, 2048 // block))
            warps = NUM_WARPS or min(16, max(1, rows * block // 512))
            grid = (triton.cdiv(n_rows, rows),)
            _rmsnorm_fused_kernel[grid](
                x, self.weight, y, n_rows, n_cols, self.eps, BLOCK_SIZE=block, ROWS=rows, num_warps=warps
            )
        else:
            _rmsnorm_looped_kernel[(n_rows,)](
                x, self.weight, y, n_cols, self.eps, BLOCK_SIZE=LOOP_BLOCK_SIZE, num_warps=LOOP_NUM_WARPS
            )
        return y
