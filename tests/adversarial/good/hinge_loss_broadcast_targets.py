# good: KernelBench level-1 hinge loss: predictions (batch, 1) times targets (batch,) broadcast to a
# (batch, batch) product as PyTorch does, clamp(1 - p * t, min=0) and its mean; one program per row of the
# broadcast product, partials summed by a second kernel into a 0-d output
# spec: kb_hinge_loss
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def hinge_row_kernel(p_ptr, t_ptr, part_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + row)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0)
    h = tl.where(mask, tl.maximum(1.0 - p * t, 0.0), 0.0)
    tl.store(part_ptr + row, tl.sum(h, axis=0))


@triton.jit
def mean_kernel(part_ptr, out_ptr, rows, total, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    parts = tl.load(part_ptr + offs, mask=offs < rows, other=0.0)
    tl.store(out_ptr, tl.sum(parts, axis=0) / total)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        p = predictions.contiguous().view(-1)
        t = targets.contiguous()
        rows, n = p.numel(), t.numel()
        parts = torch.empty(rows, device=p.device, dtype=torch.float32)
        hinge_row_kernel[(rows,)](p, t, parts, n, BLOCK=triton.next_power_of_2(n))
        out = torch.empty((), device=p.device, dtype=p.dtype)
        mean_kernel[(1,)](parts, out, rows, rows * n, BLOCK=triton.next_power_of_2(rows))
        return out
