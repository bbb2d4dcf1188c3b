# good: the fused gelu(x * scale + bias) * sigmoid(x) chain launched through a module-level cache of
# launchers keyed by (rows, cols, dtype): each entry a functools.partial over kernel[grid] with its block
# sizes bound, built on first use and reused; erf GELU, per-feature parameters broadcast over rows
# spec: shipped:elementwise_chain
import functools
import math
from collections.abc import Callable

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def chain_kernel(x_ptr, s_ptr, b_ptr, out_ptr, rows, cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(x_ptr + r[:, None] * cols + c[None, :], mask=mask, other=0.0)
    s = tl.load(s_ptr + c, mask=c < cols, other=0.0)
    b = tl.load(b_ptr + c, mask=c < cols, other=0.0)
    y = x * s[None, :] + b[None, :]
    g = 0.5 * y * (1.0 + tl.math.erf(y * 0.7071067811865476))
    tl.store(out_ptr + r[:, None] * cols + c[None, :], g * tl.sigmoid(x), mask=mask)


_LAUNCHERS: dict[tuple[int, int, torch.dtype], Callable[..., object]] = {}


def _launcher(rows: int, cols: int, dtype: torch.dtype) -> Callable[..., object]:
    key = (rows, cols, dtype)
    if key not in _LAUNCHERS:
        block_c = min(128, triton.next_power_of_2(cols))
        block_r = max(1, 512 // block_c)
        grid = (math.ceil(rows / block_r), math.ceil(cols / block_c))
        _LAUNCHERS[key] = functools.partial(chain_kernel[grid], BLOCK_R=block_r, BLOCK_C=block_c)
    return _LAUNCHERS[key]


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        rows, cols = x2.shape
        _launcher(rows, cols, x2.dtype)(x2, self.scale, self.bias, out, rows, cols)
        return out.view(x.shape)
