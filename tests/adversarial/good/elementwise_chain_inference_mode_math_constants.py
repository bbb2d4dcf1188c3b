# good: the pointwise chain spec (affine, exact GELU, sigmoid gate) with the launch inside a
# `torch.inference_mode()` block, the erf GELU's 1/sqrt(2) a module constant from math, a
# `@dataclass(frozen=True)` holding BLOCK and num_warps, the grid a lambda over meta['BLOCK'], x viewed
# flat after `.contiguous()`, an early return for an empty input
# spec: shipped:elementwise_chain
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import triton
import triton.language as tl

INV_SQRT2 = 1.0 / math.sqrt(2.0)


@dataclass(frozen=True)
class Launch:
    block: int = 1024
    num_warps: int = 4


LAUNCH = Launch()


@triton.jit
def chain_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, numel, dim, inv_sqrt2, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    col = offs % dim
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    z = x * tl.load(scale_ptr + col, mask=mask, other=0.0) + tl.load(bias_ptr + col, mask=mask, other=0.0)
    g = 0.5 * z * (1.0 + tl.math.erf(z * inv_sqrt2))
    tl.store(out_ptr + offs, g * tl.sigmoid(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        if x.numel() == 0:
            return torch.empty_like(x)
        x = x.contiguous()
        with torch.inference_mode():
            out = torch.empty_like(x)
            numel = x.numel()
            grid = lambda meta: (triton.cdiv(numel, meta["BLOCK"]),)  # noqa: E731
            chain_kernel[grid](
                x.view(-1),
                self.scale,
                self.bias,
                out.view(-1),
                numel,
                x.shape[-1],
                INV_SQRT2,
                BLOCK=LAUNCH.block,
                num_warps=LAUNCH.num_warps,
            )
        return out
