# good: mean-pooled embedding bags in fp16: launch settings in a dataclass with field(default_factory=...)
# and a classmethod choosing them from the embedding width, the fp16 table the module's own
# nn.EmbeddingBag weight, fp32 accumulation, an empty bag writes zeros, the output from weight.new_empty
# spec: shipped:embedding_bag_mean
from dataclasses import dataclass, field
from typing import Dict  # noqa: UP035 (the older spelling, on purpose)

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bag_mean_kernel(table_ptr, idx_ptr, off_ptr, out_ptr, dim, BLOCK_D: tl.constexpr):
    bag = tl.program_id(0)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    start = tl.load(off_ptr + bag)
    end = tl.load(off_ptr + bag + 1)
    acc = tl.zeros((BLOCK_D,), tl.float32)
    for j in range(start, end):
        row = tl.load(idx_ptr + j)
        acc += tl.load(table_ptr + row * dim + rd, mask=rd < dim, other=0.0).to(tl.float32)
    count = (end - start).to(tl.float32)
    mean = tl.where(count > 0, acc / tl.maximum(count, 1.0), 0.0)
    tl.store(out_ptr + bag * dim + rd, mean.to(out_ptr.dtype.element_ty), mask=rd < dim)


@dataclass
class BagLaunch:
    block_d: int = 64
    meta: Dict[str, int] = field(default_factory=lambda: {"num_warps": 2})  # noqa: UP006

    @classmethod
    def for_width(cls, dim: int) -> "BagLaunch":
        return cls(block_d=min(128, triton.next_power_of_2(dim)))


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, embedding_dim, mode="mean", include_last_offset=True)
        self.launch = BagLaunch.for_width(embedding_dim)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        weight = self.bag.weight
        batch = offsets.numel() - 1
        dim = weight.shape[1]
        out = weight.new_empty((batch, dim))
        cfg = self.launch
        bag_mean_kernel[(batch, triton.cdiv(dim, cfg.block_d))](
            weight, indices, offsets, out, dim, BLOCK_D=cfg.block_d, **cfg.meta
        )
        return out
