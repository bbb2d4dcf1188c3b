# good: the hinge loss of KernelBench's broadcast form ((batch, 1) predictions times (batch,) targets
# is a (batch, batch) product), clamp at zero by tl.maximum(..., propagate_nan=tl.PropagateNan.ALL) as
# torch.clamp propagates NaN, row partials then their mean
# spec: kb_hinge_loss
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def hinge_rows_kernel(p_ptr, t_ptr, part_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    p = tl.load(p_ptr + i)
    acc = tl.zeros((BLOCK,), tl.float32)
    for j0 in range(0, n, BLOCK):
        j = j0 + tl.arange(0, BLOCK)
        t = tl.load(t_ptr + j, mask=j < n, other=0.0)
        h = tl.maximum(1.0 - p * t, 0.0, propagate_nan=tl.PropagateNan.ALL)
        acc += tl.where(j < n, h, 0.0)
    tl.store(part_ptr + i, tl.sum(acc, axis=0))


@triton.jit
def mean_kernel(x_ptr, out_ptr, n, count, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for i0 in range(0, n, BLOCK):
        i = i0 + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + i, mask=i < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / count)


class ModelNew(nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        rows = predictions.shape[0]
        cols = targets.shape[0]
        if predictions.shape != (rows, 1) or targets.dim() != 1:
            raise ValueError(
                f"expected (batch, 1) predictions and (batch,) targets, got {tuple(predictions.shape)}"
            )
        p, t = predictions.contiguous(), targets.contiguous()
        partial = torch.empty(rows, device=p.device, dtype=torch.float32)
        out = torch.empty((), device=p.device, dtype=predictions.dtype)
        hinge_rows_kernel[(rows,)](p, t, partial, cols, BLOCK=64)
        mean_kernel[(1,)](partial, out, rows, rows * cols, BLOCK=64)
        return out
