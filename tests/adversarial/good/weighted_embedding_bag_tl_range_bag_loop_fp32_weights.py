# good: weighted embedding bag (sum mode, per-sample weights, include_last_offset): one program per (bag,
# column block) looping over its indices with tl.range, each row scaled by its weight in fp32; int64
# indices and offsets read in the kernel; the table as a registered Parameter named like the reference's
# spec: shipped:weighted_embedding_bag
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bag_sum(idx_ptr, off_ptr, w_ptr, table_ptr, out_ptr, dim, BLOCK_D: tl.constexpr):
    bag = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cmask = cols < dim
    start = tl.load(off_ptr + bag)
    end = tl.load(off_ptr + bag + 1)
    acc = tl.zeros((BLOCK_D,), tl.float32)
    for j in tl.range(start, end):
        row = tl.load(idx_ptr + j)
        weight = tl.load(w_ptr + j)
        acc += weight * tl.load(table_ptr + row * dim + cols, mask=cmask, other=0.0)
    tl.store(out_ptr + bag * dim + cols, acc, mask=cmask)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, embedding_dim))

    def forward(self, indices, offsets, weights):
        bags, dim = offsets.numel() - 1, self.weight.shape[1]
        out = torch.empty((bags, dim), device=self.weight.device, dtype=self.weight.dtype)
        block = min(64, triton.next_power_of_2(dim))
        bag_sum[(bags, triton.cdiv(dim, block))](
            indices.contiguous(),
            offsets.contiguous(),
            weights.contiguous(),
            self.weight,
            out,
            dim,
            BLOCK_D=block,
        )
        return out
