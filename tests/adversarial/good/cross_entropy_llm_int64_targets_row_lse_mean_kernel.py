# good: KernelBench level-1 cross entropy with int64 targets: per-row logsumexp minus the target logit
# (target loaded with `tl.load(t_ptr + row)` and used as an offset), then a one-program mean; LLM habits:
# `assert targets.dtype == torch.long`, `targets.to(torch.int64)` anyway, `logits.stride(0)`,
# `@torch.no_grad()` on a helper that returns a tuple of buffers, `Optional` typing
# spec: kb_cross_entropy
from typing import Optional, Tuple

# ruff: noqa: UP006, UP035, UP045, SIM222 -- typing and guards as LLMs write them
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ce_row_kernel(logits_ptr, targets_ptr, loss_ptr, C, stride_row, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    mask = cols < C
    x = tl.load(logits_ptr + row * stride_row + cols, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    t = tl.load(targets_ptr + row)
    x_t = tl.load(logits_ptr + row * stride_row + t)
    tl.store(loss_ptr + row, lse - x_t)


@triton.jit
def mean_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(x, axis=0) / n)


@torch.no_grad()
def _row_losses(logits: torch.Tensor, targets: torch.Tensor) -> Tuple[torch.Tensor, int]:
    """Per-row negative log-likelihood and the row count."""
    B, C = logits.shape
    losses = torch.empty(B, device=logits.device, dtype=torch.float32)
    ce_row_kernel[(B,)](logits, targets, losses, C, logits.stride(0), BLOCK_C=triton.next_power_of_2(C))
    return losses, B


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(
        self, predictions: torch.Tensor, targets: torch.Tensor, weight: Optional[torch.Tensor] = None
    ):
        assert weight is None, "class weights are not supported"
        assert targets.dtype == torch.long
        logits = predictions.contiguous()
        targets = targets.to(torch.int64).contiguous()
        losses, B = _row_losses(logits, targets)
        out = torch.empty((), device=logits.device, dtype=logits.dtype)
        mean_kernel[(1,)](losses, out, B, BLOCK=triton.next_power_of_2(B))
        return out
