# good: nn.EmbeddingBag(mode="sum", include_last_offset=True) with int64 indices and offsets: one program
# per (bag, column block) reads its bag's bounds from the offsets and loops over the bag's rows to a
# runtime bound, gathering table rows by index; empty bags give zeros; the table is the module's own
# nn.EmbeddingBag weight (held, never called)
# spec: shipped:embedding_bag_sum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bag_sum_kernel(idx_ptr, off_ptr, table_ptr, out_ptr, dim, stride_t, BLOCK_D: tl.constexpr):
    bag = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = cols < dim
    start = tl.load(off_ptr + bag)
    end = tl.load(off_ptr + bag + 1)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in range(start, end):
        row = tl.load(idx_ptr + i)
        acc += tl.load(table_ptr + row * stride_t + cols, mask=mask, other=0.0)
    tl.store(out_ptr + bag * dim + cols, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, embedding_dim, mode="sum", include_last_offset=True)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        table = self.bag.weight
        bags = offsets.numel() - 1
        dim = table.shape[1]
        out = torch.empty((bags, dim), dtype=table.dtype, device=table.device)
        block = min(128, triton.next_power_of_2(dim))
        bag_sum_kernel[(bags, triton.cdiv(dim, block))](
            indices, offsets, table, out, dim, table.stride(0), BLOCK_D=block
        )
        return out
