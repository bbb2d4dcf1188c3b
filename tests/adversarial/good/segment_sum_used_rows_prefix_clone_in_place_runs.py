# good: sorted segment sum in place: the row count is read on the host from a kernel's count
# (`.item()`), the used rows cloned (`values[:rows].clone()`, a copy of an input's prefix) so a
# Triton kernel can accumulate each run into its first row in place, then a kernel gathers the run heads
# spec: shipped:segment_sum
# strict: true
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def count_kernel(ids_ptr, n_ptr, n, nseg, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    seg = tl.load(ids_ptr + idx, mask=idx < n, other=nseg)
    tl.atomic_add(n_ptr, tl.sum((seg < nseg).to(tl.int32), axis=0))


@triton.jit
def scan_runs_kernel(v_ptr, ids_ptr, out_ptr, rows, dim, nseg, BLOCK_D: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = cols < dim
    for s in range(0, nseg):
        tl.store(out_ptr + s * dim + cols, tl.zeros((BLOCK_D,), dtype=tl.float32), mask=mask)
    head = 0
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    seg = tl.load(ids_ptr)
    for i in range(0, rows):
        cur = tl.load(ids_ptr + i)
        if cur != seg:
            tl.store(v_ptr + head * dim + cols, acc, mask=mask)
            tl.store(out_ptr + seg * dim + cols, acc, mask=mask)
            head = i
            seg = cur
            acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
        acc += tl.load(v_ptr + i * dim + cols, mask=mask, other=0.0)
    if rows > 0:
        tl.store(v_ptr + head * dim + cols, acc, mask=mask)
        tl.store(out_ptr + seg * dim + cols, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_segments: int):
        super().__init__()
        self.num_segments = num_segments

    def forward(self, values: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        n, dim = values.shape
        used = torch.zeros(1, dtype=torch.int32, device=values.device)
        count_kernel[(triton.cdiv(n, 64),)](segment_ids, used, n, self.num_segments, BLOCK=64)
        rows = used.item()
        work = values[:rows].clone()
        out = torch.empty((self.num_segments, dim), dtype=values.dtype, device=values.device)
        scan_runs_kernel[(triton.cdiv(dim, 64),)](
            work, segment_ids, out, rows, dim, self.num_segments, BLOCK_D=64
        )
        return out
