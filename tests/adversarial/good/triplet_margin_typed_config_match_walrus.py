# good: triplet margin loss with a frozen, type-annotated dataclass config, a match statement on the
# input's rank, a walrus in the shape check, f-string errors; one kernel per triplet row computes both
# pairwise distances (with PyTorch's eps added to the difference) and the hinge, a second the mean
# spec: kb_triplet_margin
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import triton
import triton.language as tl


@dataclass(frozen=True)
class TripletConfig:
    margin: float = 1.0
    eps: float = 1e-6
    block: int = 64


@triton.jit
def triplet_rows_kernel(a_ptr, p_ptr, n_ptr, loss_ptr, dim, margin, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    ap = tl.zeros((BLOCK,), tl.float32)
    an = tl.zeros((BLOCK,), tl.float32)
    for d0 in range(0, dim, BLOCK):
        d = d0 + tl.arange(0, BLOCK)
        m = d < dim
        a = tl.load(a_ptr + row * dim + d, mask=m, other=0.0)
        p = tl.load(p_ptr + row * dim + d, mask=m, other=0.0)
        n = tl.load(n_ptr + row * dim + d, mask=m, other=0.0)
        dp = tl.where(m, a - p + eps, 0.0)
        dn = tl.where(m, a - n + eps, 0.0)
        ap += dp * dp
        an += dn * dn
    hinge = tl.sqrt(tl.sum(ap, axis=0)) - tl.sqrt(tl.sum(an, axis=0)) + margin
    tl.store(loss_ptr + row, tl.maximum(hinge, 0.0))


@triton.jit
def mean_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for i0 in range(0, n, BLOCK):
        i = i0 + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + i, mask=i < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n)


class ModelNew(nn.Module):
    def __init__(self, margin: float = 1.0):
        super().__init__()
        self.config = TripletConfig(margin=margin)

    def forward(self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        match anchor.dim():
            case 2:
                rows, dim = anchor.shape
            case 1:
                rows, dim = 1, anchor.shape[0]
            case other:
                raise ValueError(f"triplet loss takes 1-D or 2-D embeddings, got {other}-D")
        if (shapes := {tuple(t.shape) for t in (anchor, positive, negative)}) and len(shapes) != 1:
            raise ValueError(f"anchor, positive and negative differ in shape: {sorted(shapes)}")
        cfg = self.config
        a, p, n = (t.contiguous() for t in (anchor, positive, negative))
        per_row = torch.empty(rows, device=a.device, dtype=torch.float32)
        out = torch.empty((), device=a.device, dtype=anchor.dtype)
        triplet_rows_kernel[(rows,)](a, p, n, per_row, dim, cfg.margin, cfg.eps, BLOCK=cfg.block)
        mean_kernel[(1,)](per_row, out, rows, BLOCK=cfg.block)
        return out
