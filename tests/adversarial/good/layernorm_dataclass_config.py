# good: layernorm whose launch parameters live in a frozen dataclass (block size, warps) built per shape by
# a classmethod; the constexprs reach the launch as **dataclasses.asdict(...) and eps as a class constant;
# typing annotations throughout
# spec: layernorm
from __future__ import annotations

import dataclasses
from typing import Optional

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + row * stride + offs, centred * rstd * w + b, mask=mask)


@dataclasses.dataclass(frozen=True)
class BlockConfig:
    BLOCK: int
    num_warps: int = 4

    @classmethod
    def for_width(cls, n: int) -> BlockConfig:
        block = triton.next_power_of_2(n)
        return cls(BLOCK=block, num_warps=8 if block >= 2048 else 4)


class ModelNew(nn.Module):
    EPS: float = 1e-5

    def __init__(self, features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        with torch.no_grad():  # same draws, same order as the reference
            self.weight.copy_(torch.randn(features))
            self.bias.copy_(torch.randn(features))
        self._config: Optional[BlockConfig] = None  # noqa: UP045 (the older spelling, on purpose)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, n = x.shape
        if self._config is None or n > self._config.BLOCK:
            self._config = BlockConfig.for_width(n)
        out = torch.empty_like(x)
        layernorm_kernel[(rows,)](
            x, self.weight, self.bias, out, x.stride(0), n, self.EPS, **dataclasses.asdict(self._config)
        )
        return out
