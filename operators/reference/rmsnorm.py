"""RMS normalisation over the hidden dimension of (batch, seq, hidden) activations, LLaMA style."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight, the mean taken over the last dimension."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


batch_size = 16
seq_len = 2048
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim]
