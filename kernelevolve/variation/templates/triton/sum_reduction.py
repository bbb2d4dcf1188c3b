# kernelevolve-template: name=sum_reduction family=sum_reduction backend=triton
# kernelevolve-variant: name=mean_dim family=mean_dim MEAN=True KEEPDIM=False
"""torch.sum(x, dim=self.dim, keepdim=True) for any dim (KernelBench 47 form), fp32 accumulation; through
its variant, torch.mean(x, dim=self.dim) (48): the same exact sum, divided once in fp64.

The contiguous input is viewed as (outer, n, inner). When the reduced dim is the last one
(inner == 1) each program sums whole rows chunk by chunk with coalesced loads, packing several
short rows per program; otherwise a program owns a strip of `inner` columns of one outer slice
and walks down the reduced dim, so loads stay coalesced along the contiguous inner axis.

Long rows need more than plain fp32 lanes: each lane adds n / BLOCK values serially onto partial
sums of magnitude ~sqrt(n), and for n = 2**20 of randn the rounding (~3e-4 rms) exceeds atol 1e-4
where it matters, on rows whose sum cancels to near zero (rtol gives no slack there). So every
lane also sums the exact rounding error of each of its adds (TwoSum, 6 more fp32 adds per element,
which leaves a memory-bound loop memory-bound) and the lanes meet in fp64: the result is the
exact sum of the inputs rounded once.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Rows (inner == 1): chunk length and rows per program (0: pack short rows to ~4096 elements).
BLOCK_SIZE = 4096  # tune: 1024, 2048, 4096, 8192
ROWS_PER_PROGRAM = 0  # tune: 0, 1, 2, 4, 8, 16
NUM_WARPS = 8  # tune: 2, 4, 8, 16
# Columns (inner > 1): reduced-dim chunk x inner strip.
COL_BLOCK_R = 32  # tune: 8, 16, 32, 64
COL_BLOCK_I = 128  # tune: 32, 64, 128, 256
COL_NUM_WARPS = 4  # tune: 2, 4, 8

# What this template computes (fixed by the problem, not a tunable).
MEAN = False
KEEPDIM = True


@triton.jit
def _two_sum_add(acc, err, x):
    # Knuth's TwoSum: (acc + x) - t is exactly what rounding t = acc + x lost; err collects it.
    t = acc + x
    z = t - acc
    return t, err + ((acc - (t - z)) + (x - z))


@triton.jit
def _lanes_total(acc, err, axis: tl.constexpr):
    # Lanes meet in fp64 (an fp32 tree over lane sums of ~sqrt(n) would round by ~1e-4 again). A lane
    # that met inf/NaN keeps its plain sum, where err is NaN, so non-finite results match torch.sum.
    a = acc.to(tl.float64)
    return tl.sum(tl.where(tl.abs(acc) < float("inf"), a + err.to(tl.float64), a), axis=axis)


@triton.jit
def _row_sum_kernel(x_ptr, y_ptr, n_rows, n_cols, divisor, BLOCK_SIZE: tl.constexpr, ROWS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < n_rows
    row_base = rows.to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros([ROWS, BLOCK_SIZE], tl.float32)
    err = tl.zeros([ROWS, BLOCK_SIZE], tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        c = start + cols
        mask = row_ok[:, None] & (c[None, :] < n_cols)
        x = tl.load(x_ptr + row_base[:, None] + c[None, :], mask=mask, other=0.0).to(tl.float32)
        acc, err = _two_sum_add(acc, err, x)
    out = _lanes_total(acc, err, 1) / divisor
    tl.store(y_ptr + rows, out.to(tl.float32).to(y_ptr.dtype.element_ty), mask=row_ok)


@triton.jit
def _col_sum_kernel(
    x_ptr, y_ptr, n_red, inner, n_strips, divisor, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr
):
    pid = tl.program_id(0)
    outer = pid // n_strips
    cols = (pid % n_strips) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = outer.to(tl.int64) * n_red * inner
    red = tl.arange(0, BLOCK_R)
    acc = tl.zeros([BLOCK_R, BLOCK_I], tl.float32)
    err = tl.zeros([BLOCK_R, BLOCK_I], tl.float32)
    for start in range(0, n_red, BLOCK_R):
        r = start + red
        offs = base + r.to(tl.int64)[:, None] * inner + cols[None, :]
        mask = (r[:, None] < n_red) & col_ok[None, :]
        acc, err = _two_sum_add(acc, err, tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32))
    out = (_lanes_total(acc, err, 0) / divisor).to(tl.float32)
    tl.store(y_ptr + outer.to(tl.int64) * inner + cols, out.to(y_ptr.dtype.element_ty), mask=col_ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        dim = self.dim % x.dim()
        n_red = x.shape[dim]
        inner = math.prod(x.shape[dim + 1 :])
        outer = math.prod(x.shape[:dim])
        out_shape = list(x.shape)
        if KEEPDIM:
            out_shape[dim] = 1
        else:
            del out_shape[dim]
        divisor = n_red if MEAN else 1  # a mean over an empty dim divides 0 by 0: NaN, as torch.mean
        y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        if y.numel() == 0:
            return y
        if inner == 1:
            block = min(BLOCK_SIZE, triton.next_power_of_2(max(n_red, 1)))
            rows = ROWS_PER_PROGRAM or max(1, min(16, 4096 // block))
            _row_sum_kernel[(triton.cdiv(outer, rows),)](
                x, y, outer, n_red, divisor, BLOCK_SIZE=block, ROWS=rows, num_warps=NUM_WARPS
            )
        else:
            block_i = min(COL_BLOCK_I, triton.next_power_of_2(inner))
            n_strips = triton.cdiv(inner, block_i)
            _col_sum_kernel[(outer * n_strips,)](
                x,
                y,
                n_red,
                inner,
                n_strips,
                divisor,
                BLOCK_R=COL_BLOCK_R,
                BLOCK_I=block_i,
                num_warps=COL_NUM_WARPS,
            )
        return y
