"""RMSNorm of (batch, seq, hidden) activations with a learned weight, for training: x and weight need gradients."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last dimension (LLaMA's RMSNorm)."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


batch_size = 8
seq_len = 2048
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim]
