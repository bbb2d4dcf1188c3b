# good: a reference whose output reads a Python int step counter; ModelNew keeps the count as a 0-d int64
# buffer (`step`, stepped in place on the device, no host sync) that the kernel reads to form the scale
# spec: step_counter_weighted
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, w_ptr, step_ptr, out_ptr, n, features, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    step = tl.load(step_ptr)
    scale = 1.0 + 0.5 * (step % 3).to(tl.float32)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs % features, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * w * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("step", torch.zeros((), dtype=torch.int64))
        self.weight = nn.Parameter(torch.randn(features))

    def forward(self, x):
        self.step.add_(1)
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_kernel[(triton.cdiv(n, 256),)](x, self.weight, self.step, out, n, x.shape[1], BLOCK=256)
        return out
