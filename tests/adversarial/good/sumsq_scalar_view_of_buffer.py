# good: whole-vector sum of squares: per-block partials with tl.atomic_add into a one-element zeroed
# buffer, the 0-d result returned as the buffer's .view(()) (shape () like the reference's)
# spec: sumsq
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sumsq_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(acc_ptr, tl.sum(x * x, axis=0))


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        acc = torch.zeros(1, dtype=torch.float32, device=x.device)
        n = x.numel()
        sumsq_kernel[(triton.cdiv(n, 256),)](x, acc, n, BLOCK=256)
        return acc.view(())
