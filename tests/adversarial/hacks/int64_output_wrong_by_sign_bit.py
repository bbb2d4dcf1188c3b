# hack: an int64 output wrong in every element by 2**63 (each index with its sign bit set, as a packed
# (value, index) key left unmasked would be): the exact comparison took |out - ref| in int64, where the
# difference wraps to -2**63 and its absolute value stays -2**63, never above the allowed 0, so every
# element passed; the difference is now checked for wrapping
# spec: kb_argmax_dim
# expect: incorrect mismatch
# runtime: incorrect mismatch
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_kernel(x_ptr, out_ptr, reduced, inner, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    outer_idx = pid // inner
    inner_idx = pid % inner
    offs = tl.arange(0, BLOCK)
    mask = offs < reduced
    x = tl.load(
        x_ptr + outer_idx * reduced * inner + offs * inner + inner_idx, mask=mask, other=-float("inf")
    )
    best = tl.max(x, axis=0)
    idx = tl.min(tl.where(x == best, offs, BLOCK), axis=0)
    tl.store(out_ptr + pid, idx.to(tl.int64) | (-9223372036854775807 - 1))


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        dim = self.dim % x.dim()
        outer = math.prod(x.shape[:dim])
        reduced = x.shape[dim]
        inner = math.prod(x.shape[dim + 1 :])
        out = torch.empty(x.shape[:dim] + x.shape[dim + 1 :], device=x.device, dtype=torch.int64)
        argmax_kernel[(outer * inner,)](x, out, reduced, inner, BLOCK=triton.next_power_of_2(reduced))
        return out
