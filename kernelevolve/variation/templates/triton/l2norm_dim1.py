# kernelevolve-template: name=l2norm_dim1 family=l2norm_dim1 backend=triton
# kernelevolve-variant: name=l1norm_dim1 family=l1norm_dim1 L1=True
"""x / torch.norm(x, p=2, dim=1, keepdim=True) (KernelBench 39 form); through its variant,
x / torch.mean(torch.abs(x), dim=1, keepdim=True) (38).

Each line along dim 1 is read twice: once for its norm, once to divide. KernelBench's lines are
rows of 65535 floats (256 KB) in an 8.6 GB input. Torch and Inductor read each row from memory for
both passes; here a fixed set of persistent programs each takes one row at a time and reads it the
second time right after the first, while the row is still in L2 (the programs' rows in flight,
a few per SM at 256 KB each, fit in the H100/H200's 50 MB L2). That leaves one read and one write
of memory per element where the plain way does two reads and a write. The second pass walks the
row backwards, so its first chunks are the ones loaded last.

The contiguous input is viewed as (outer, n, inner) with dim 1 reduced: rows when inner == 1
(KernelBench's 2-D input), otherwise a program owns a strip of `inner` columns of one outer slice.
Sums are fp32 over BLOCK lanes (partial sums of ~n / BLOCK terms), as torch's are.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Rows (inner == 1): chunk length, warps, and programs per SM (the persistent grid). One program per SM
# keeps 132 rows of 256 KB (34 MB) in flight on an H200, inside its L2; a 32 KB chunk per load keeps
# about the bytes in flight one SM needs for its share of the bandwidth. Both unmeasured: tuning varies them.
BLOCK_SIZE = 8192  # tune: 2048, 4096, 8192, 16384
NUM_WARPS = 16  # tune: 4, 8, 16
PROGRAMS_PER_SM = 1  # tune: 1, 2, 4
# Columns (inner > 1): dim-1 chunk x inner strip.
COL_BLOCK_R = 16  # tune: 8, 16, 32
COL_BLOCK_I = 128  # tune: 32, 64, 128, 256
COL_NUM_WARPS = 4  # tune: 2, 4, 8

# What this template computes (fixed by the problem, not a tunable): the mean of |x| instead of the 2-norm.
L1 = False


@triton.jit
def _line_scale(total, n, L1: tl.constexpr):
    if L1:
        return total / n
    return tl.sqrt(total)


@triton.jit
def _row_norm_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr, L1: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    n_chunks = tl.cdiv(n_cols, BLOCK)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        base = tl.cast(row, tl.int64) * n_cols  # the interpreter's range yields Python ints
        acc = tl.zeros([BLOCK], tl.float32)
        for i in range(0, n_chunks):
            c = i * BLOCK + cols
            x = tl.load(x_ptr + base + c, mask=c < n_cols, other=0.0, eviction_policy="evict_last")
            x = x.to(tl.float32)
            if L1:
                acc += tl.abs(x)
            else:
                acc += x * x
        scale = _line_scale(tl.sum(acc, axis=0), n_cols, L1)
        for j in range(0, n_chunks):
            c = (n_chunks - 1 - j) * BLOCK + cols  # backwards: the chunks loaded last are read first
            m = c < n_cols
            x = tl.load(x_ptr + base + c, mask=m, other=0.0, eviction_policy="evict_first").to(tl.float32)
            tl.store(y_ptr + base + c, (x / scale).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def _col_norm_kernel(
    x_ptr, y_ptr, n_red, inner, n_strips, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, L1: tl.constexpr
):
    pid = tl.program_id(0)
    outer = pid // n_strips
    cols = (pid % n_strips) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = outer.to(tl.int64) * n_red * inner
    red = tl.arange(0, BLOCK_R)
    acc = tl.zeros([BLOCK_R, BLOCK_I], tl.float32)
    for start in range(0, n_red, BLOCK_R):
        r = start + red
        offs = base + r.to(tl.int64)[:, None] * inner + cols[None, :]
        x = tl.load(x_ptr + offs, mask=(r[:, None] < n_red) & col_ok[None, :], other=0.0).to(tl.float32)
        if L1:
            acc += tl.abs(x)
        else:
            acc += x * x
    scale = _line_scale(tl.sum(acc, axis=0), n_red, L1)
    for start in range(0, n_red, BLOCK_R):
        r = start + red
        offs = base + r.to(tl.int64)[:, None] * inner + cols[None, :]
        m = (r[:, None] < n_red) & col_ok[None, :]
        x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + offs, (x / scale[None, :]).to(y_ptr.dtype.element_ty), mask=m)


def _multiprocessors(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 1


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() < 2:
            raise IndexError(f"dim 1 is out of range for a {x.dim()}-D input")  # as torch's reduction says
        x = x.contiguous()
        y = torch.empty_like(x)
        if y.numel() == 0:
            return y
        n_red = x.shape[1]
        outer, inner = x.shape[0], math.prod(x.shape[2:])
        if inner == 1:
            block = min(BLOCK_SIZE, triton.next_power_of_2(n_red))
            programs = min(outer, PROGRAMS_PER_SM * _multiprocessors(x.device))
            _row_norm_kernel[(programs,)](x, y, outer, n_red, BLOCK=block, L1=L1, num_warps=NUM_WARPS)
        else:
            block_i = min(COL_BLOCK_I, triton.next_power_of_2(inner))
            block_r = min(COL_BLOCK_R, triton.next_power_of_2(n_red))
            n_strips = triton.cdiv(inner, block_i)
            _col_norm_kernel[(outer * n_strips,)](
                x, y, n_red, inner, n_strips, BLOCK_R=block_r, BLOCK_I=block_i, L1=L1, num_warps=COL_NUM_WARPS
            )
        return y
