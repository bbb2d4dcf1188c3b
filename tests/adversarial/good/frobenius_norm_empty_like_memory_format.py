# good: x / ||x||_F with the output from torch.empty_like(x, memory_format=torch.contiguous_format) (the
# kernels index it flat), the sum of squares accumulated by tl.atomic_add into a zeroed fp32 scalar, a
# second kernel scaling by its reciprocal square root
# spec: kb_frobenius_norm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sumsq_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.atomic_add(acc_ptr, tl.sum(x * x, axis=0))


@triton.jit
def scale_kernel(x_ptr, acc_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    norm = tl.sqrt(tl.load(acc_ptr))
    tl.store(y_ptr + offs, x / norm, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x, memory_format=torch.contiguous_format)
        acc = torch.zeros((), device=x.device, dtype=torch.float32)
        n = x.numel()
        block = 256
        grid = (triton.cdiv(n, block),)
        sumsq_kernel[grid](x, acc, n, BLOCK=block)
        scale_kernel[grid](x, acc, y, n, BLOCK=block)
        return y
