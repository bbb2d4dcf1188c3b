# kernelevolve-template: name=layernorm_rowwise family=layernorm backend=triton
"""nn.LayerNorm over the trailing normalized_shape, one pass over memory.

Each program holds whole rows in registers: mean, then variance of the centred values (exact,
no E[x^2] - mean^2 cancellation), then scale and shift, with one read and one write per element.
Rows longer than MAX_FUSED_SIZE take a two-pass loop (per-lane Welford statistics, then
normalise). Works for any normalized_shape (KernelBench 40_LayerNorm form included).
"""

import math

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
def _layernorm_fused_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, eps, BLOCK_SIZE: tl.constexpr, ROWS: tl.constexpr
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / n_cols
    centred = tl.where(mask, x - mean[:, None], 0.0)
    var = tl.sum(centred * centred, axis=1) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    y = centred * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _layernorm_looped_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK_SIZE)
    # Per-lane Welford: a lane valid in chunk k was valid in every earlier chunk, so all lanes
    # updated in chunk k have seen k + 1 values and share one reciprocal.
    mean = tl.zeros([BLOCK_SIZE], tl.float32)
    m2 = tl.zeros([BLOCK_SIZE], tl.float32)
    seen = tl.full([], 0.0, tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        c = start + cols
        ok = c < n_cols
        x = tl.load(x_ptr + base + c, mask=ok, other=0.0).to(tl.float32)
        seen += 1.0
        inv_seen = 1.0 / seen
        delta = x - mean
        mean += tl.where(ok, delta * inv_seen, 0.0)
        m2 += tl.where(ok, delta * (x - mean), 0.0)
    count = tl.maximum((n_cols - cols + BLOCK_SIZE - 1) // BLOCK_SIZE, 0).to(tl.float32)
    row_mean = tl.sum(count * mean, axis=0) / n_cols
    spread = mean - row_mean
    var = tl.sum(m2 + count * spread * spread, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        c = start + cols
        ok = c < n_cols
        x = tl.load(x_ptr + base + c, mask=ok, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=ok, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=ok, other=0.0).to(tl.float32)
        y = (x - row_mean) * rstd * w + b
        tl.store(y_ptr + base + c, y.to(y_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = math.prod(self.ln.normalized_shape)
        y = torch.empty_like(x)
        if x.numel() == 0:
            return y
        n_rows = x.numel() // n_cols
        weight, bias = self.ln.weight, self.ln.bias
        block = triton.next_power_of_2(n_cols)
        if block <= MAX_FUSED_SIZE:
            rows = ROWS_PER_PROGRAM or max(1, min(8, 2048 // block))
            warps = NUM_WARPS or min(16, max(1, rows * block // 512))
            grid = (triton.cdiv(n_rows, rows),)
            _layernorm_fused_kernel[grid](
                x, weight, bias, y, n_rows, n_cols, self.ln.eps, BLOCK_SIZE=block, ROWS=rows, num_warps=warps
            )
        else:
            _layernorm_looped_kernel[(n_rows,)](
                x, weight, bias, y, n_cols, self.ln.eps, BLOCK_SIZE=LOOP_BLOCK_SIZE, num_warps=LOOP_NUM_WARPS
            )
        return y
