# good: KernelBench level-1 TripletMarginLoss: the reference's `nn.TripletMarginLoss` kept as
# `self.loss_fn` only to read its `margin`, `p`, `eps` and `swap` (asserted off), one program per row
# computing both pairwise distances with PyTorch's eps added to the difference, then a mean kernel;
# `Tuple` typing, `math.isclose` on p, documented helpers, `torch.empty((), ...)` result
# spec: kb_triplet_margin
import math
from typing import Tuple

# ruff: noqa: UP006, UP035, UP045, SIM222 -- typing and guards as LLMs write them
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def triplet_row_kernel(a_ptr, p_ptr, n_ptr, row_ptr, D, stride, margin, eps, BLOCK_D: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    a = tl.load(a_ptr + row * stride + cols, mask=mask, other=0.0)
    p = tl.load(p_ptr + row * stride + cols, mask=mask, other=0.0)
    n = tl.load(n_ptr + row * stride + cols, mask=mask, other=0.0)
    dp = tl.where(mask, a - p + eps, 0.0)
    dn = tl.where(mask, a - n + eps, 0.0)
    d_pos = tl.sqrt(tl.sum(dp * dp, axis=0))
    d_neg = tl.sqrt(tl.sum(dn * dn, axis=0))
    tl.store(row_ptr + row, tl.maximum(d_pos - d_neg + margin, 0.0))


@triton.jit
def mean_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(x, axis=0) / n)


def _loss_settings(loss_fn: nn.TripletMarginLoss) -> Tuple[float, float]:
    """(margin, eps) of the module; only the L2 distance without swap is implemented."""
    assert math.isclose(loss_fn.p, 2.0) and not loss_fn.swap
    return float(loss_fn.margin), float(loss_fn.eps)


class ModelNew(nn.Module):
    def __init__(self, margin: float = 1.0):
        super().__init__()
        self.loss_fn = nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        anchor, positive, negative = (t.contiguous() for t in (anchor, positive, negative))
        B, D = anchor.shape
        margin, eps = _loss_settings(self.loss_fn)
        rows = torch.empty(B, device=anchor.device, dtype=torch.float32)
        triplet_row_kernel[(B,)](
            anchor,
            positive,
            negative,
            rows,
            D,
            anchor.stride(0),
            margin,
            eps,
            BLOCK_D=triton.next_power_of_2(D),
        )
        out = torch.empty((), device=anchor.device, dtype=anchor.dtype)
        mean_kernel[(1,)](rows, out, B, BLOCK=triton.next_power_of_2(B))
        return out
