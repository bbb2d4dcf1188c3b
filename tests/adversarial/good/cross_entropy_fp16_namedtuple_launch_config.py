# good: F.cross_entropy over fp16 logits and int64 targets: per-row loss in fp32 (max, log-sum-exp, the
# target's logit gathered) by one kernel, mean by a second one-program kernel into a 0-d fp16 output;
# launch settings as a typing.NamedTuple held on the module, forward under `@torch.no_grad()`
# spec: kb_half_cross_entropy
from typing import NamedTuple

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ce_rows(logits_ptr, targets_ptr, loss_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(logits_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    target = tl.load(targets_ptr + row)
    picked = tl.sum(tl.where(cols == target, x, 0.0), axis=0)
    tl.store(loss_ptr + row, lse - picked)


@triton.jit
def mean_to_scalar(loss_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, (tl.sum(acc, axis=0) / n).to(out_ptr.dtype.element_ty))


class LaunchConfig(NamedTuple):
    reduce_block: int = 16
    num_warps: int = 4


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = LaunchConfig()

    @torch.no_grad()
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        rows, cols = predictions.shape
        losses = torch.empty(rows, device=predictions.device, dtype=torch.float32)
        ce_rows[(rows,)](
            predictions.contiguous(),
            targets.contiguous(),
            losses,
            cols,
            BLOCK=triton.next_power_of_2(cols),
            num_warps=self.cfg.num_warps,
        )
        out = torch.empty((), device=predictions.device, dtype=predictions.dtype)
        mean_to_scalar[(1,)](losses, out, rows, BLOCK=self.cfg.reduce_block)
        return out
