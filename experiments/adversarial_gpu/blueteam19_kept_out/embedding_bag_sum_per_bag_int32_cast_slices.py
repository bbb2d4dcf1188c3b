# good: embedding bag sum with one launch per bag: offsets read by `tolist()`, each bag's indices cast
# to int32 (`indices[start:end].to(torch.int32)`, a cast copy of a slice of an input) and summed over
# the table by a kernel writing that bag's row
# spec: shipped:embedding_bag_sum
# strict: true
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def one_bag_kernel(idx_ptr, n, table_ptr, out_ptr, dim, stride_t, BLOCK_D: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in range(0, n):
        row = tl.load(idx_ptr + i).to(tl.int64)
        acc += tl.load(table_ptr + row * stride_t + cols, mask=cols < dim, other=0.0)
    tl.store(out_ptr + cols, acc, mask=cols < dim)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, embedding_dim, mode="sum", include_last_offset=True)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        table = self.bag.weight
        bounds = offsets.tolist()
        dim = table.shape[1]
        out = torch.empty((len(bounds) - 1, dim), dtype=table.dtype, device=table.device)
        for b, (start, end) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            ids = indices[start:end].to(torch.int32)
            one_bag_kernel[(triton.cdiv(dim, 64),)](
                ids, ids.numel(), table, out[b], dim, table.stride(0), BLOCK_D=64
            )
        return out
