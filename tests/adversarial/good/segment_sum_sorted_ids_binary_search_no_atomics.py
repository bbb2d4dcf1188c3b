# good: segment sum over the spec's sorted int64 segment ids without atomics: one program per (segment,
# column block) finds its run of rows with two lower-bound binary searches over the ids (a fixed number of
# halving steps on scalars), then sums the run in row order (as index_add does) into a torch.empty
# output it fully writes, zeros for an empty segment
# spec: shipped:segment_sum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lower_bound(ids_ptr, n_rows, target, steps):
    lo = tl.zeros((), dtype=tl.int64)
    hi = tl.zeros((), dtype=tl.int64) + n_rows
    for _ in range(steps):
        active = lo < hi
        mid = (lo + hi) // 2
        less = tl.load(ids_ptr + mid, mask=active, other=0) < target
        lo = tl.where(active & less, mid + 1, lo)
        hi = tl.where(active & ~less, mid, hi)
    return lo


@triton.jit
def sorted_segment_sum_kernel(v_ptr, ids_ptr, out_ptr, n_rows, dim, steps, BLOCK_D: tl.constexpr):
    seg = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cmask = cols < dim
    start = _lower_bound(ids_ptr, n_rows, seg, steps)
    end = _lower_bound(ids_ptr, n_rows, seg + 1, steps)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for r in tl.range(start, end):
        acc += tl.load(v_ptr + r * dim + cols, mask=cmask, other=0.0)
    tl.store(out_ptr + seg.to(tl.int64) * dim + cols, acc.to(out_ptr.dtype.element_ty), mask=cmask)


class ModelNew(nn.Module):
    def __init__(self, num_segments: int):
        super().__init__()
        self.num_segments = num_segments

    def forward(self, values: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        values = values.contiguous()
        n_rows, dim = values.shape
        out = torch.empty((self.num_segments, dim), dtype=values.dtype, device=values.device)
        steps = max(1, n_rows).bit_length() + 1
        block_d = min(64, triton.next_power_of_2(dim))
        sorted_segment_sum_kernel[(self.num_segments, triton.cdiv(dim, block_d))](
            values, segment_ids.contiguous(), out, n_rows, dim, steps, BLOCK_D=block_d
        )
        return out
