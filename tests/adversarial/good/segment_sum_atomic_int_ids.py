# good: segment sum (index_add of rows into num_segments rows) with int64 segment ids: tl.atomic_add of
# each row into a torch.zeros fp32 output, a 2-D grid over (row block, column block)
# spec: shipped:segment_sum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def segment_sum_kernel(v_ptr, ids_ptr, out_ptr, rows, dim, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    rmask = r < rows
    mask = rmask[:, None] & (c[None, :] < dim)
    seg = tl.load(ids_ptr + r, mask=rmask, other=0)
    vals = tl.load(v_ptr + r[:, None] * dim + c[None, :], mask=mask, other=0.0)
    tl.atomic_add(out_ptr + seg[:, None] * dim + c[None, :], vals, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_segments: int):
        super().__init__()
        self.num_segments = num_segments

    def forward(self, values: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        values = values.contiguous()
        rows, dim = values.shape
        out = torch.zeros(self.num_segments, dim, dtype=torch.float32, device=values.device)
        grid = (triton.cdiv(rows, 16), triton.cdiv(dim, 32))
        segment_sum_kernel[grid](values, segment_ids, out, rows, dim, BLOCK_R=16, BLOCK_D=32)
        return out
