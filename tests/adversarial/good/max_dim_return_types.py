# good: KernelBench level-1 style torch.max over a dim with its indices: the reference returns the named
# tuple (values, indices); the kernel writes both, the indices int64 (the first maximum, as torch), and
# returns the same type, torch.return_types.max((values, indices))
# spec: kb_max_with_indices
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def max_idx_kernel(x_ptr, val_ptr, idx_ptr, reduced, inner, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    o = pid // inner
    i = pid % inner
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + o * reduced * inner + offs * inner + i, mask=offs < reduced, other=-float("inf"))
    best = tl.max(x, axis=0)
    tl.store(val_ptr + pid, best)
    tl.store(idx_ptr + pid, tl.min(tl.where(x == best, offs, BLOCK), axis=0).to(tl.int64))


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        dim = self.dim % x.dim()
        outer = math.prod(x.shape[:dim])
        inner = math.prod(x.shape[dim + 1 :])
        shape = x.shape[:dim] + x.shape[dim + 1 :]
        values = torch.empty(shape, device=x.device, dtype=x.dtype)
        indices = torch.empty(shape, device=x.device, dtype=torch.int64)
        max_idx_kernel[(outer * inner,)](
            x, values, indices, x.shape[dim], inner, BLOCK=triton.next_power_of_2(x.shape[dim])
        )
        return torch.return_types.max((values, indices))
