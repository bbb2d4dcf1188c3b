# kept out (state_between_calls, by design): weighted sum-pooled embedding bags written into an output
# buffer preallocated once per (batch, dim) and returned on every call (the kernel writes every element);
# a returned tensor kept between calls is what a cached result looks like, and the caller's previous
# result changes under it. The good form: weighted_embedding_bag_reused_fp32_accumulator (scratch reused,
# output fresh)
# spec: shipped:weighted_embedding_bag
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def weighted_bag_kernel(table_ptr, idx_ptr, off_ptr, psw_ptr, out_ptr, dim, BLOCK_D: tl.constexpr):
    bag = tl.program_id(0)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    start = tl.load(off_ptr + bag)
    end = tl.load(off_ptr + bag + 1)
    acc = tl.zeros((BLOCK_D,), tl.float32)
    for j in range(start, end):
        row = tl.load(idx_ptr + j)
        w = tl.load(psw_ptr + j)
        acc += w * tl.load(table_ptr + row * dim + rd, mask=rd < dim, other=0.0)
    tl.store(out_ptr + bag * dim + rd, acc, mask=rd < dim)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, embedding_dim))
        self._out: dict = {}

    def _buffer(self, batch: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        key = (batch, device, dtype)
        if key not in self._out:
            self._out[key] = torch.empty((batch, self.weight.shape[1]), device=device, dtype=dtype)
        return self._out[key]

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor, per_sample_weights: torch.Tensor) -> torch.Tensor:
        batch = offsets.numel() - 1
        dim = self.weight.shape[1]
        out = self._buffer(batch, indices.device, self.weight.dtype)
        block = min(128, triton.next_power_of_2(dim))
        weighted_bag_kernel[(batch, triton.cdiv(dim, block))](
            self.weight, indices, offsets, per_sample_weights, out, dim, BLOCK_D=block
        )
        return out
