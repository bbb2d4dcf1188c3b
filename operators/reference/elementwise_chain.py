"""Fused pointwise chain: per-feature affine, exact GELU, then a sigmoid gate taken from the input."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """y = gelu(x * scale + bias) * sigmoid(x), with scale and bias learned per feature (last dim)."""

    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.gelu(x * self.scale + self.bias)
        return y * torch.sigmoid(x)


batch_size = 8192
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
