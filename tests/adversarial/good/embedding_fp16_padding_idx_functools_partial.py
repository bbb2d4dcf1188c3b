# good: nn.Embedding(padding_idx=0) in fp16, the gather launched through a `functools.partial` of the
# launch (the grid and block bound once in __init__), int64 token ids read in the kernel; the table is
# the module's own `embed.weight` (its padding row is whatever the harness's values put there)
# spec: kb_half_embedding
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embedding_gather(ids_ptr, table_ptr, out_ptr, dim, BLOCK_D: tl.constexpr):
    tok = tl.program_id(0)
    idx = tl.load(ids_ptr + tok)
    cols = tl.arange(0, BLOCK_D)
    row = tl.load(table_ptr + idx * dim + cols, mask=cols < dim, other=0.0)
    tl.store(out_ptr + tok.to(tl.int64) * dim + cols, row, mask=cols < dim)


def _launch(ids, table, out, *, block_d):
    embedding_gather[(ids.numel(),)](ids, table, out, table.shape[1], BLOCK_D=block_d)
    return out


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embed = nn.Embedding(num_embeddings, embedding_dim, padding_idx=0, dtype=torch.float16)
        self._gather = functools.partial(_launch, block_d=triton.next_power_of_2(embedding_dim))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        weight = self.embed.weight
        out = weight.new_empty((*ids.shape, weight.shape[1]))
        return self._gather(ids.contiguous(), weight, out)
