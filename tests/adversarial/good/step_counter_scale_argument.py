# good: a reference whose output reads a Python int step counter (`self.calls += 1`); the kernel keeps the
# same counter and passes the call's scale to the kernel as a scalar
# spec: step_counter
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, scale, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_kernel[(triton.cdiv(n, 256),)](x, out, 1.0 + 0.5 * (self.calls % 3), n, BLOCK=256)
        return out
