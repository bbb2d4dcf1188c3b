# good: EmbeddingBag(sum, include_last_offset) by a helper that writes into a caller-provided out= and
# returns it (forward allocates it), one program per (bag, column block), the gathered row offset
# widened with .to(tl.int64) before multiplying by the row length (a million rows times the dim), an fp32
# accumulator, empty bags written as zeros
# spec: shipped:embedding_bag_sum

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bag_sum_kernel(idx_ptr, off_ptr, w_ptr, out_ptr, dim, BLOCK_D: tl.constexpr):
    bag = tl.program_id(0)
    d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    start = tl.load(off_ptr + bag)
    end = tl.load(off_ptr + bag + 1)
    acc = tl.zeros((BLOCK_D,), tl.float32)
    for i in range(start, end):
        row = tl.load(idx_ptr + i).to(tl.int64)
        acc += tl.load(w_ptr + row * dim + d, mask=d < dim, other=0.0).to(tl.float32)
    tl.store(out_ptr + bag.to(tl.int64) * dim + d, acc.to(out_ptr.dtype.element_ty), mask=d < dim)


def bag_sum(
    indices: torch.Tensor, offsets: torch.Tensor, weight: torch.Tensor, *, out: torch.Tensor | None = None
) -> torch.Tensor:
    bags = offsets.numel() - 1
    dim = weight.shape[1]
    if out is None:
        out = weight.new_empty((bags, dim))
    elif out.shape != (bags, dim) or not out.is_contiguous():
        raise ValueError(f"out must be a contiguous ({bags}, {dim}) tensor, got {tuple(out.shape)}")
    block_d = 64
    bag_sum_kernel[(bags, triton.cdiv(dim, block_d))](indices, offsets, weight, out, dim, BLOCK_D=block_d)
    return out


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, embedding_dim, mode="sum", include_last_offset=True)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        weight = self.bag.weight.contiguous()
        out = torch.empty((offsets.numel() - 1, weight.shape[1]), device=weight.device, dtype=weight.dtype)
        return bag_sum(indices.contiguous(), offsets.contiguous(), weight, out=out)
