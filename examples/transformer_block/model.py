"""A small transformer MLP block whose hot ops are kernelevolve spec families: RMSNorm and SwiGLU.

    y = x + down(swiglu(up(rmsnorm(x))))

`RMSNorm` and `SwiGLU` are ordinary modules; `optimize_and_swap.py` hands each one to
`kernelevolve.optimize` with example inputs, then swaps the winners into the block.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last dimension, normalised in fp32 as LLaMA's is."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # In fp32, rounded once to x's dtype before the weight (LLaMA's RMSNorm): rounding every step
        # in bf16 puts the reference 2 ulps from the exact result, beyond bf16's rtol, so a correct
        # fp32-accumulating kernel would fail against it at some weights.
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


class SwiGLU(nn.Module):
    """silu(gate) * up over the two halves of the last dimension."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


class MLPBlock(nn.Module):
    """Pre-norm residual MLP: RMSNorm -> up projection (2 x hidden) -> SwiGLU -> down projection."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.up = nn.Linear(dim, 2 * hidden, bias=False)
        self.act = SwiGLU()
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(self.act(self.up(self.norm(x))))


class TinyTransformerMLP(nn.Module):
    """A stack of MLP blocks, enough to time end to end."""

    def __init__(self, dim: int, hidden: int, depth: int):
        super().__init__()
        self.blocks = nn.ModuleList(MLPBlock(dim, hidden) for _ in range(depth))
        self.final_norm = RMSNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.final_norm(x)


def build_model(dim: int, hidden: int, depth: int, seed: int = 0) -> TinyTransformerMLP:
    """A model with non-trivial norm weights (ones would hide a kernel that ignores them)."""
    torch.manual_seed(seed)
    model = TinyTransformerMLP(dim, hidden, depth)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, RMSNorm):
                module.weight.uniform_(0.5, 1.5)
    return model.eval()
