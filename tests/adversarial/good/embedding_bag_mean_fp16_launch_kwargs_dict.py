# good: mean-pooled embedding bags in fp16 with the launch settings built by a helper returning a dict
# (BLOCK_D and num_warps from the embedding width) spread into the launch with **, the grid by another
# helper returning a tuple; the table the module's own nn.EmbeddingBag weight, fp32 sums, an empty bag
# writes zeros
# spec: shipped:embedding_bag_mean
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bag_mean_kernel(idx_ptr, off_ptr, table_ptr, out_ptr, dim, BLOCK_D: tl.constexpr):
    bag = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cmask = cols < dim
    start = tl.load(off_ptr + bag)
    end = tl.load(off_ptr + bag + 1)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in tl.range(start, end):
        row = tl.load(idx_ptr + i).to(tl.int64)
        acc += tl.load(table_ptr + row * dim + cols, mask=cmask, other=0.0).to(tl.float32)
    count = (end - start).to(tl.float32)
    mean = tl.where(count > 0, acc / tl.maximum(count, 1.0), 0.0)
    tl.store(out_ptr + bag * dim + cols, mean.to(out_ptr.dtype.element_ty), mask=cmask)


def launch_settings(dim: int) -> dict[str, int]:
    block = min(64, triton.next_power_of_2(dim))
    return {"BLOCK_D": block, "num_warps": 1 if block <= 32 else 2}


def bag_grid(bags: int, dim: int, settings: dict[str, int]) -> tuple[int, int]:
    return bags, triton.cdiv(dim, settings["BLOCK_D"])


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, embedding_dim, mode="mean", include_last_offset=True)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        table = self.bag.weight
        dim = table.shape[1]
        bags = offsets.numel() - 1
        out = torch.empty((bags, dim), dtype=table.dtype, device=table.device)
        settings = launch_settings(dim)
        bag_mean_kernel[bag_grid(bags, dim, settings)](indices, offsets, table, out, dim, **settings)
        return out
