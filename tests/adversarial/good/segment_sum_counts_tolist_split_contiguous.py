# good: sorted segment sum by segment: a Triton kernel counts each segment's rows, the counts read on the
# host (`tolist()`) split the values (`torch.split`, each piece `.contiguous()`), one launch per
# segment sums its rows
# spec: shipped:segment_sum
# strict: true
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def counts_kernel(ids_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    seg = tl.load(ids_ptr + idx, mask=idx < n, other=0)
    tl.atomic_add(counts_ptr + seg, 1, mask=idx < n)


@triton.jit
def rows_sum_kernel(v_ptr, out_ptr, rows, dim, BLOCK_D: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in range(0, rows):
        acc += tl.load(v_ptr + i * dim + cols, mask=cols < dim, other=0.0)
    tl.store(out_ptr + cols, acc, mask=cols < dim)


class ModelNew(nn.Module):
    def __init__(self, num_segments: int):
        super().__init__()
        self.num_segments = num_segments

    def forward(self, values: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        n, dim = values.shape
        counts = torch.zeros(self.num_segments, dtype=torch.int32, device=values.device)
        counts_kernel[(triton.cdiv(n, 64),)](segment_ids, counts, n, BLOCK=64)
        out = torch.empty((self.num_segments, dim), dtype=values.dtype, device=values.device)
        for s, piece in enumerate(torch.split(values, counts.tolist())):
            piece = piece.contiguous()
            rows_sum_kernel[(triton.cdiv(dim, 64),)](piece, out[s], piece.shape[0], dim, BLOCK_D=64)
        return out
