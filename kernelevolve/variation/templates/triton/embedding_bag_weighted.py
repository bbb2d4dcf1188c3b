# kernelevolve-template: name=embedding_bag_weighted family=embedding_bag_weighted backend=triton
"""F.embedding_bag(indices, weight, offsets, mode="sum", per_sample_weights=w, include_last_offset=True)
with the table held as the module's `weight`: each gathered row scaled by its sample weight, then summed.

Program (bag, d-block) walks its bag BLOCK_N indices at a time: it loads the indices and their weights,
gathers a BLOCK_N x BLOCK_D tile of table rows and adds the weighted tile to an fp32 accumulator, reduced
once at the end. Empty bags give zeros.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_N = 16  # tune: 4, 8, 16, 32, 64
BLOCK_D = 128  # tune: 32, 64, 128, 256
NUM_WARPS = 4  # tune: 1, 2, 4, 8


@triton.jit
def _weighted_bag_kernel(
    indices_ptr,
    offsets_ptr,
    sample_ptr,
    weight_ptr,
    out_ptr,
    dim,
    stride_w,
    stride_o,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    bag = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    col_ok = cols < dim
    start = tl.load(offsets_ptr + bag).to(tl.int64)
    end = tl.load(offsets_ptr + bag + 1).to(tl.int64)
    lanes = tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    for first in range(start, end, BLOCK_N):
        pos = first + lanes
        ok = pos < end
        rows = tl.load(indices_ptr + pos, mask=ok, other=0).to(tl.int64)
        scale = tl.load(sample_ptr + pos, mask=ok, other=0.0).to(tl.float32)
        tile = tl.load(
            weight_ptr + rows[:, None] * stride_w + cols[None, :],
            mask=ok[:, None] & col_ok[None, :],
            other=0.0,
        )
        acc += tile.to(tl.float32) * scale[:, None]
    tl.store(out_ptr + bag * stride_o + cols, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=col_ok)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, embedding_dim))

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        table = self.weight
        indices = indices.contiguous()
        offsets = offsets.contiguous()
        weights = weights.contiguous()
        batch = offsets.shape[0] - 1
        dim = table.shape[1]
        out = torch.empty((batch, dim), dtype=table.dtype, device=table.device)
        if out.numel() == 0:
            return out
        block_d = min(BLOCK_D, triton.next_power_of_2(dim))
        grid = (batch, triton.cdiv(dim, block_d))
        _weighted_bag_kernel[grid](
            indices,
            offsets,
            weights,
            table,
            out,
            dim,
            table.stride(0),
            out.stride(0),
            BLOCK_N=BLOCK_N,
            BLOCK_D=block_d,
            num_warps=NUM_WARPS,
        )
        return out
