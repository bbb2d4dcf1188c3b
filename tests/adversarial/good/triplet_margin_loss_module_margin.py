# good: KernelBench level-1 triplet margin loss (nn.TripletMarginLoss, p=2, eps=1e-6 added to the
# difference as torch's pairwise_distance does); the margin comes from get_init_inputs and is kept on the
# module; one program per row, then a mean kernel into a 0-d output
# spec: kb_triplet_margin
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def triplet_row_kernel(a_ptr, p_ptr, n_ptr, loss_ptr, dim, margin, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < dim
    a = tl.load(a_ptr + row * dim + offs, mask=mask, other=0.0)
    p = tl.load(p_ptr + row * dim + offs, mask=mask, other=0.0)
    n = tl.load(n_ptr + row * dim + offs, mask=mask, other=0.0)
    dp = tl.where(mask, a - p + eps, 0.0)
    dn = tl.where(mask, a - n + eps, 0.0)
    d_pos = tl.sqrt(tl.sum(dp * dp, axis=0))
    d_neg = tl.sqrt(tl.sum(dn * dn, axis=0))
    tl.store(loss_ptr + row, tl.maximum(d_pos - d_neg + margin, 0.0))


@triton.jit
def mean_kernel(loss_ptr, out_ptr, rows, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(loss_ptr + offs, mask=offs < rows, other=0.0), axis=0) / rows)


class ModelNew(nn.Module):
    def __init__(self, margin=1.0):
        super().__init__()
        self.margin = margin

    def forward(self, anchor, positive, negative):
        a, p, n = anchor.contiguous(), positive.contiguous(), negative.contiguous()
        rows, dim = a.shape
        losses = torch.empty(rows, device=a.device, dtype=torch.float32)
        triplet_row_kernel[(rows,)](
            a, p, n, losses, dim, self.margin, 1e-6, BLOCK=triton.next_power_of_2(dim)
        )
        out = torch.empty((), device=a.device, dtype=a.dtype)
        mean_kernel[(1,)](losses, out, rows, BLOCK=triton.next_power_of_2(rows))
        return out
