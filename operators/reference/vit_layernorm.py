"""LayerNorm over the hidden dimension of a Vision Transformer's (batch, tokens, hidden) activations."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm(hidden, eps=1e-6) with its learned weight and bias (ViT's pre-norm)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 128
num_tokens = 197
hidden = 768


def get_inputs():
    return [torch.randn(batch_size, num_tokens, hidden)]


def get_init_inputs():
    return [hidden]
