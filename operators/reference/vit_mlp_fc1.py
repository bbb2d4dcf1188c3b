"""The first layer of a Vision Transformer's MLP block: a linear layer with bias, then exact (erf) GELU."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """gelu(x @ W^T + b) on (batch, tokens, hidden) activations, W of shape (mlp_dim, hidden)."""

    def __init__(self, hidden: int, mlp_dim: int):
        super().__init__()
        self.fc1 = nn.Linear(hidden, mlp_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.fc1(x))


batch_size = 64
num_tokens = 197
hidden = 768
mlp_dim = 3072


def get_inputs():
    return [torch.randn(batch_size, num_tokens, hidden)]


def get_init_inputs():
    return [hidden, mlp_dim]
