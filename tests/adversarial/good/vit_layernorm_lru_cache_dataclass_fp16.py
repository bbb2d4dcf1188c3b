# good: ViT pre-norm LayerNorm in fp16: launch parameters in a frozen dataclass made by an lru_cache'd
# function of the hidden size, the (batch, tokens, hidden) input viewed as rows, fp32 statistics, the
# module's own ones/zeros weight and bias (nn.Parameter), the output view_as the input
# spec: shipped:vit_layernorm
import functools
from dataclasses import dataclass

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_kernel(x_ptr, w_ptr, b_ptr, out_ptr, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < hidden
    x = tl.load(x_ptr + row * hidden + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / hidden
    diff = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(diff * diff, axis=0) / hidden + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * hidden + offs, (diff * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)


@dataclass(frozen=True)
class LaunchConfig:
    block: int
    num_warps: int


@functools.lru_cache(maxsize=64)
def config_for(hidden: int) -> LaunchConfig:
    block = triton.next_power_of_2(hidden)
    return LaunchConfig(block=block, num_warps=min(8, max(1, block // 256)))


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.eps = 1e-6
        self.weight = nn.Parameter(torch.ones(hidden))
        self.bias = nn.Parameter(torch.zeros(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x.shape[-1]
        rows = x.view(-1, hidden) if x.is_contiguous() else x.reshape(-1, hidden)
        out = torch.empty_like(rows)
        cfg = config_for(hidden)
        ln_kernel[(rows.shape[0],)](
            rows, self.weight, self.bias, out, hidden, self.eps, BLOCK=cfg.block, num_warps=cfg.num_warps
        )
        return out.view_as(x)
