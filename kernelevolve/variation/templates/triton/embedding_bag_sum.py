# kernelevolve-template: name=embedding_bag_sum family=embedding_bag_sum backend=triton
# kernelevolve-variant: name=embedding_bag_mean family=embedding_bag_mean MEAN=True
"""nn.EmbeddingBag(mode="sum", include_last_offset=True) as a gather-and-accumulate kernel; its variant
embedding_bag_mean divides each bag's sum by its size (mode="mean").

Program (bag, d-block) walks its bag BLOCK_N indices at a time: it loads the indices, gathers a
BLOCK_N x BLOCK_D tile of table rows (independent loads in flight hide gather latency) and adds
it to an fp32 accumulator, reduced once at the end. Empty bags give zeros. The table is the
module's own nn.EmbeddingBag weight, created exactly as the reference creates it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_N = 16  # tune: 4, 8, 16, 32, 64
BLOCK_D = 128  # tune: 32, 64, 128, 256
NUM_WARPS = 4  # tune: 1, 2, 4, 8
MEAN = False  # mode="mean": each bag's sum over its size (an empty bag still gives zeros)


@triton.jit
def _bag_sum_kernel(
    indices_ptr,
    offsets_ptr,
    weight_ptr,
    out_ptr,
    dim,
    stride_w,
    stride_o,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    MEAN: tl.constexpr,
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
        tile = tl.load(
            weight_ptr + rows[:, None] * stride_w + cols[None, :],
            mask=ok[:, None] & col_ok[None, :],
            other=0.0,
        )
        acc += tile.to(tl.float32)
    total = tl.sum(acc, axis=0)
    if MEAN:
        total = total / tl.maximum(end - start, 1).to(tl.float32)
    tl.store(out_ptr + bag * stride_o + cols, total.to(out_ptr.dtype.element_ty), mask=col_ok)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, embedding_dim, mode="sum", include_last_offset=True)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        weight = self.bag.weight
        indices = indices.contiguous()
        offsets = offsets.contiguous()
        batch = offsets.shape[0] - 1
        dim = weight.shape[1]
        out = torch.empty((batch, dim), dtype=weight.dtype, device=weight.device)
        if out.numel() == 0:
            return out
        block_d = min(BLOCK_D, triton.next_power_of_2(dim))
        grid = (batch, triton.cdiv(dim, block_d))
        _bag_sum_kernel[grid](
            indices,
            offsets,
            weight,
            out,
            dim,
            weight.stride(0),
            out.stride(0),
            BLOCK_N=BLOCK_N,
            BLOCK_D=block_d,
            MEAN=MEAN,
            num_warps=NUM_WARPS,
        )
        return out
