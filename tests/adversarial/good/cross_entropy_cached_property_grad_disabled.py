# good: cross entropy (mean) with the launch configuration a functools.cached_property of the module
# (computed once from constants, never from inputs), the forward body inside
# `with torch.set_grad_enabled(False):` (a scoped switch, restored on exit), one program per row doing
# max, logsumexp and the target pick with int64 targets, then the mean
# spec: kb_cross_entropy
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ce_row_kernel(x_ptr, t_ptr, loss_ptr, classes, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * classes + c, mask=c < classes, other=float("-inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    target = tl.load(t_ptr + row)
    picked = tl.sum(tl.where(c == target, x, 0.0), axis=0)
    tl.store(loss_ptr + row, lse - picked)


@triton.jit
def mean_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i0 in range(0, n, BLOCK):
        acc += tl.load(x_ptr + i0 + i, mask=i0 + i < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n)


class ModelNew(nn.Module):
    @functools.cached_property
    def reduce_block(self) -> int:
        return 64

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        with torch.set_grad_enabled(False):
            x = predictions.contiguous()
            rows, classes = x.shape
            per_row = torch.empty(rows, device=x.device, dtype=torch.float32)
            out = torch.empty((), device=x.device, dtype=predictions.dtype)
            ce_row_kernel[(rows,)](
                x, targets.contiguous(), per_row, classes, BLOCK=triton.next_power_of_2(classes)
            )
            mean_kernel[(1,)](per_row, out, rows, BLOCK=self.reduce_block)
        return out
