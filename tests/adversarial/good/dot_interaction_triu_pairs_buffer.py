# good: DLRM pairwise dot interaction: the (i, j) pairs of the strict upper triangle built once per
# feature count by torch.triu_indices into a cached int64 table (a non-persistent buffer), one program per
# (sample, block of pairs) loads its pairs' indices and dots the two embedding rows over a D loop
# spec: shipped:dot_interaction
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pair_dot_kernel(
    f_ptr, pairs_ptr, out_ptr, num_pairs, num_features, dim, BLOCK_P: tl.constexpr, BLOCK_D: tl.constexpr
):
    b = tl.program_id(0)
    p = tl.program_id(1) * BLOCK_P + tl.arange(0, BLOCK_P)
    pmask = p < num_pairs
    i = tl.load(pairs_ptr + p, mask=pmask, other=0)
    j = tl.load(pairs_ptr + num_pairs + p, mask=pmask, other=0)
    base = f_ptr + b * num_features * dim
    acc = tl.zeros((BLOCK_P,), dtype=tl.float32)
    for d0 in range(0, dim, BLOCK_D):
        d = d0 + tl.arange(0, BLOCK_D)
        m = pmask[:, None] & (d[None, :] < dim)
        u = tl.load(base + i[:, None] * dim + d[None, :], mask=m, other=0.0)
        v = tl.load(base + j[:, None] * dim + d[None, :], mask=m, other=0.0)
        acc += tl.sum(u * v, axis=1)
    tl.store(out_ptr + b * num_pairs + p, acc, mask=pmask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("pairs", torch.empty(2, 0, dtype=torch.int64), persistent=False)

    def _pairs(self, num: int, device: torch.device) -> torch.Tensor:
        if self.pairs.shape[1] != num * (num - 1) // 2 or self.pairs.device != device:
            self.pairs = torch.triu_indices(num, num, offset=1, device=device).contiguous()
        return self.pairs

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        features = features.contiguous()
        batch, num, dim = features.shape
        pairs = self._pairs(num, features.device)
        num_pairs = pairs.shape[1]
        out = torch.empty((batch, num_pairs), device=features.device, dtype=features.dtype)
        block_p = min(64, triton.next_power_of_2(num_pairs))
        grid = (batch, triton.cdiv(num_pairs, block_p))
        pair_dot_kernel[grid](features, pairs, out, num_pairs, num, dim, BLOCK_P=block_p, BLOCK_D=32)
        return out
