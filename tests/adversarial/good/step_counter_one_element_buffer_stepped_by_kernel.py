# good: a reference whose output reads a Python int step counter; ModelNew keeps the count in a
# one-element int64 buffer (shape (1,), the form device-side step counters take) that a one-program Triton
# kernel steps on the device, and the scaling kernel reads it to form the call's factor
# spec: step_counter_weighted
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def step_kernel(step_ptr):
    tl.store(step_ptr, tl.load(step_ptr) + 1)


@triton.jit
def scaled_kernel(x_ptr, w_ptr, step_ptr, out_ptr, n, features, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    scale = 1.0 + 0.5 * (tl.load(step_ptr) % 3).to(tl.float32)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs % features, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * w * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("step", torch.zeros(1, dtype=torch.int64))
        self.weight = nn.Parameter(torch.randn(features))

    def forward(self, x):
        x = x.contiguous()
        step_kernel[(1,)](self.step)
        out = torch.empty_like(x)
        n = x.numel()
        scaled_kernel[(triton.cdiv(n, 128),)](x, self.weight, self.step, out, n, x.shape[-1], BLOCK=128)
        return out
