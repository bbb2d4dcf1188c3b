# good: embedding bag sum with 32-bit indices: the total read on the host (`int(offsets[-1])`), the used
# indices narrowed to int32 (`indices[:total].to(torch.int32)`, a cast copy of an input's prefix), one
# program per (bag, column block) sums the table rows (the module's own nn.EmbeddingBag weight)
# spec: shipped:embedding_bag_sum
# strict: true
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
        row = tl.load(idx_ptr + i).to(tl.int64)
        acc += tl.load(table_ptr + row * stride_t + cols, mask=mask, other=0.0)
    tl.store(out_ptr + bag * dim + cols, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, embedding_dim, mode="sum", include_last_offset=True)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        table = self.bag.weight
        total = int(offsets[-1])
        idx32 = indices[:total].to(torch.int32)
        off32 = offsets.to(torch.int32)
        bags, dim = offsets.numel() - 1, table.shape[1]
        out = torch.empty((bags, dim), dtype=table.dtype, device=table.device)
        block = min(128, triton.next_power_of_2(dim))
        bag_sum_kernel[(bags, triton.cdiv(dim, block))](
            idx32, off32, table, out, dim, table.stride(0), BLOCK_D=block
        )
        return out
