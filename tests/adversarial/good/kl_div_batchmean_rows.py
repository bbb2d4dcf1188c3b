# good: KernelBench level-1 KL divergence, reduction="batchmean": one program per row sums
# t * (log t - log p) (zero where t is zero, as torch's xlogy), writes the row's partial, and a
# second single-program kernel sums the partials and divides by the batch into a 0-d output
# spec: kb_kl_div
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kl_row_kernel(p_ptr, t_ptr, part_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    p = tl.load(p_ptr + row * cols + offs, mask=mask, other=1.0)
    t = tl.load(t_ptr + row * cols + offs, mask=mask, other=0.0)
    term = tl.where(t > 0, t * (tl.log(t) - tl.log(p)), 0.0)
    tl.store(part_ptr + row, tl.sum(term, axis=0))


@triton.jit
def batchmean_kernel(part_ptr, out_ptr, rows, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    parts = tl.load(part_ptr + offs, mask=offs < rows, other=0.0)
    tl.store(out_ptr, tl.sum(parts, axis=0) / rows)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        p = predictions.contiguous()
        t = targets.contiguous()
        rows, cols = p.shape
        parts = torch.empty(rows, device=p.device, dtype=torch.float32)
        kl_row_kernel[(rows,)](p, t, parts, cols, BLOCK=triton.next_power_of_2(cols))
        out = torch.empty((), device=p.device, dtype=p.dtype)
        batchmean_kernel[(1,)](parts, out, rows, BLOCK=triton.next_power_of_2(rows))
        return out
