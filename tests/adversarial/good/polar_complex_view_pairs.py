# good: unit phasors as a complex output: the kernel writes (cos, sin) pairs into a float buffer that is
# returned viewed as complex64 (permissive: the strict static rules count the complex view as PyTorch work)
# spec: polar
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def phasor(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + 2 * offs, tl.cos(x), mask=mask)
    tl.store(out_ptr + 2 * offs + 1, tl.sin(x), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        pairs = torch.empty(x.numel(), 2, dtype=torch.float32, device=x.device)
        phasor[(triton.cdiv(x.numel(), 64),)](x, pairs, x.numel(), BLOCK=64)
        return torch.view_as_complex(pairs).view(x.shape)
