# good: KernelBench level-1 hinge loss, whose (B, 1) predictions times (B,) targets broadcast to (B, B):
# one program per prediction row summing clamp(1 - p_i * t_j, 0) over every target, pre-scaled by
# 1/(B*B), then a one-program sum into a 0-d output; `Optional` typing, `@torch.no_grad()` on the
# documented launcher, `.view(-1)` after `contiguous()`, `torch.empty((), ...)`, a shape assert
# spec: kb_hinge_loss
from typing import Optional

# ruff: noqa: UP006, UP035, UP045, SIM222 -- typing and guards as LLMs write them
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def hinge_row_kernel(p_ptr, t_ptr, out_ptr, n_t, inv_total, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    p = tl.load(p_ptr + row)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_t
    t = tl.load(t_ptr + offs, mask=mask, other=0.0)
    h = tl.where(mask, tl.maximum(1.0 - p * t, 0.0), 0.0)
    tl.store(out_ptr + row, tl.sum(h, axis=0) * inv_total)


@triton.jit
def sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(x, axis=0))


@torch.no_grad()
def hinge_mean(predictions: torch.Tensor, targets: torch.Tensor, block: Optional[int] = None) -> torch.Tensor:
    """mean(clamp(1 - predictions * targets, min=0)) with (B, 1) x (B,) broadcasting, as a 0-d tensor."""
    assert predictions.dim() == 2 and predictions.shape[1] == 1 and targets.dim() == 1
    p = predictions.contiguous().view(-1)
    t = targets.contiguous().view(-1)
    n_p, n_t = p.numel(), t.numel()
    block = block or triton.next_power_of_2(n_t)
    rows = torch.empty(n_p, device=p.device, dtype=torch.float32)
    hinge_row_kernel[(n_p,)](p, t, rows, n_t, 1.0 / (n_p * n_t), BLOCK=block)
    out = torch.empty((), device=p.device, dtype=p.dtype)
    sum_kernel[(1,)](rows, out, n_p, BLOCK=triton.next_power_of_2(n_p))
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return hinge_mean(predictions, targets)
