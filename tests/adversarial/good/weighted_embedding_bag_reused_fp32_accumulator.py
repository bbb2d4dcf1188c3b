# good: weighted sum-pooled embedding bags accumulated with tl.atomic_add (one program per looked-up row)
# into an fp32 buffer preallocated once per (batch, dim) and reused across calls, zeroed in place with
# .zero_() before each call, then a second kernel writes the fresh output; int64 indices and offsets, a
# bag id per row found by a binary search over the offsets
# spec: shipped:weighted_embedding_bag
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scatter_rows_kernel(
    table_ptr, idx_ptr, off_ptr, psw_ptr, acc_ptr, batch, dim, LOG_STEPS: tl.constexpr, BLOCK_D: tl.constexpr
):
    j = tl.program_id(0)
    # the bag holding element j: the last b with offsets[b] <= j
    lo = 0
    hi = batch
    for _ in range(LOG_STEPS):
        mid = (lo + hi + 1) // 2
        go = tl.load(off_ptr + mid) <= j
        lo = tl.where(go, mid, lo)
        hi = tl.where(go, hi, mid - 1)
    row = tl.load(idx_ptr + j)
    w = tl.load(psw_ptr + j)
    rd = tl.arange(0, BLOCK_D)
    for d0 in range(0, dim, BLOCK_D):
        cols = d0 + rd
        vals = tl.load(table_ptr + row * dim + cols, mask=cols < dim, other=0.0)
        tl.atomic_add(acc_ptr + lo * dim + cols, w * vals, mask=cols < dim)


@triton.jit
def cast_out_kernel(acc_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(
        out_ptr + offs, tl.load(acc_ptr + offs, mask=offs < n).to(out_ptr.dtype.element_ty), mask=offs < n
    )


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, embedding_dim))
        self._acc: dict = {}

    def _accumulator(self, batch: int, dim: int, device: torch.device) -> torch.Tensor:
        key = (batch, dim, device)
        if key not in self._acc:
            self._acc[key] = torch.empty((batch, dim), device=device, dtype=torch.float32)
        return self._acc[key]

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        batch = offsets.numel() - 1
        dim = self.weight.shape[1]
        acc = self._accumulator(batch, dim, indices.device)
        acc.zero_()
        total = indices.numel()
        if total > 0:
            scatter_rows_kernel[(total,)](
                self.weight, indices, offsets, weights, acc, batch, dim,
                LOG_STEPS=batch.bit_length() + 1, BLOCK_D=min(64, triton.next_power_of_2(dim)),
            )  # fmt: skip
        out = torch.empty((batch, dim), device=indices.device, dtype=self.weight.dtype)
        n = out.numel()
        cast_out_kernel[(triton.cdiv(n, 256),)](acc, out, n, BLOCK=256)
        return out
