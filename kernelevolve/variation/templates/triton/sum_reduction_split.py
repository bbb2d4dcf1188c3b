# kernelevolve-template: name=sum_reduction_split family=sum_reduction backend=triton
# kernelevolve-variant: name=mean_dim_split family=mean_dim MEAN=True KEEPDIM=False
"""torch.sum(x, dim=self.dim, keepdim=True), splitting long rows across programs (KernelBench 47 form);
through its variant, torch.mean(x, dim=self.dim) (48), the combined fp64 sum divided once.

With few, long rows one program per row leaves most SMs idle. Here each row is cut into SPLIT
contiguous segments summed by separate programs into an fp64 scratch (rows, SPLIT); a second
small kernel adds the partials in a fixed order (deterministic, no atomics). The reduced dim
need not be last: the contiguous input is viewed as (outer, n, inner) and segments of the
reduced dim are summed for a strip of `inner` columns.

Plain fp32 lanes lose ~3e-4 rms over a 2**20-element row of randn (partial sums ~sqrt(n)), more
than atol 1e-4 where a row's sum cancels to near zero (rtol gives no slack there). So each lane
also sums the exact rounding error of each of its adds (TwoSum, 6 more fp32 adds per element,
which leaves a memory-bound loop memory-bound), and lanes, partials and the combine are fp64:
the result is the exact sum of the inputs rounded once.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 4096  # tune: 1024, 2048, 4096, 8192
NUM_WARPS = 8  # tune: 2, 4, 8, 16
# Target number of programs per SM for the first pass; rows are split until it is reached.
PROGRAMS_PER_SM = 8  # tune: 2, 4, 8, 16
# Columns (inner > 1): reduced-dim chunk x inner strip.
COL_BLOCK_R = 32  # tune: 8, 16, 32, 64
COL_BLOCK_I = 128  # tune: 32, 64, 128, 256

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
def _partial_sum_kernel(
    x_ptr, part_ptr, n_red, inner, n_strips, split, seg_len, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr
):
    # program (outer, strip, segment): sums x[outer, seg_start:seg_end, strip columns]
    pid = tl.program_id(0)
    seg = pid % split
    rest = pid // split
    strip = rest % n_strips
    outer = rest // n_strips
    cols = strip * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = outer.to(tl.int64) * n_red * inner
    seg_start = seg * seg_len
    seg_end = tl.minimum(seg_start + seg_len, n_red)
    red = tl.arange(0, BLOCK_R)
    acc = tl.zeros([BLOCK_R, BLOCK_I], tl.float32)
    err = tl.zeros([BLOCK_R, BLOCK_I], tl.float32)
    for start in range(seg_start, seg_end, BLOCK_R):
        r = start + red
        offs = base + r.to(tl.int64)[:, None] * inner + cols[None, :]
        x = tl.load(x_ptr + offs, mask=(r[:, None] < seg_end) & col_ok[None, :], other=0.0).to(tl.float32)
        acc, err = _two_sum_add(acc, err, x)
    # scratch layout: (outer, inner, split) so the combine kernel reads partials contiguously
    dest = (outer.to(tl.int64) * inner + cols) * split + seg
    tl.store(part_ptr + dest, _lanes_total(acc, err, 0), mask=col_ok)


@triton.jit
def _combine_kernel(
    part_ptr, y_ptr, n_out, split, divisor, BLOCK_OUT: tl.constexpr, BLOCK_SPLIT: tl.constexpr
):
    outs = tl.program_id(0) * BLOCK_OUT + tl.arange(0, BLOCK_OUT)
    parts = tl.arange(0, BLOCK_SPLIT)
    mask = (outs[:, None] < n_out) & (parts[None, :] < split)
    p = tl.load(part_ptr + outs.to(tl.int64)[:, None] * split + parts[None, :], mask=mask, other=0.0)
    total = tl.sum(p, axis=1) / divisor
    tl.store(y_ptr + outs, total.to(tl.float32).to(y_ptr.dtype.element_ty), mask=outs < n_out)


def _multiprocessors(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 1


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
            # a "strip" is one row; the reduced dim is walked BLOCK_SIZE elements at a time
            block_r, block_i = min(BLOCK_SIZE, triton.next_power_of_2(max(n_red, 1))), 1
        else:
            block_r, block_i = COL_BLOCK_R, min(COL_BLOCK_I, triton.next_power_of_2(inner))
        n_strips = triton.cdiv(inner, block_i)
        base_programs = outer * n_strips
        want = PROGRAMS_PER_SM * _multiprocessors(x.device)
        split = max(1, min(triton.cdiv(want, base_programs), triton.cdiv(max(n_red, 1), block_r)))
        seg_len = triton.cdiv(triton.cdiv(max(n_red, 1), split), block_r) * block_r
        split = triton.cdiv(max(n_red, 1), seg_len)
        partials = torch.empty((outer * inner * split,), dtype=torch.float64, device=x.device)
        _partial_sum_kernel[(base_programs * split,)](
            x,
            partials,
            n_red,
            inner,
            n_strips,
            split,
            seg_len,
            BLOCK_R=block_r,
            BLOCK_I=block_i,
            num_warps=NUM_WARPS,
        )
        n_out = outer * inner
        block_split = triton.next_power_of_2(split)
        block_out = max(1, min(256, 4096 // block_split))
        _combine_kernel[(triton.cdiv(n_out, block_out),)](
            partials, y, n_out, split, divisor, BLOCK_OUT=block_out, BLOCK_SPLIT=block_split, num_warps=4
        )
        return y
