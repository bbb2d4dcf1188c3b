# good: KernelBench level-1 MSE loss: each program sums the squared differences of a block, adds the
# partial into a 1-element fp32 buffer by tl.atomic_add, and a second kernel divides by the count into
# the 0-d output the reference returns
# spec: kb_mse_loss
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sq_diff_partial_kernel(p_ptr, t_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(p_ptr + offs, mask=mask, other=0.0) - tl.load(t_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(acc_ptr, tl.sum(d * d, axis=0))


@triton.jit
def divide_kernel(acc_ptr, out_ptr, n):
    tl.store(out_ptr, tl.load(acc_ptr) / n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        p = predictions.contiguous().view(-1)
        t = targets.contiguous().view(-1)
        n = p.numel()
        acc = torch.zeros(1, device=p.device, dtype=torch.float32)
        BLOCK = 256
        sq_diff_partial_kernel[(triton.cdiv(n, BLOCK),)](p, t, acc, n, BLOCK=BLOCK)
        out = torch.empty((), device=p.device, dtype=predictions.dtype)
        divide_kernel[(1,)](acc, out, n)
        return out
