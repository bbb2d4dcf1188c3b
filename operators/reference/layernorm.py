"""Layer normalisation over the trailing dimension with a learned weight and bias (nn.LayerNorm)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm(normalized_shape): normalise each row to zero mean / unit variance, then scale and shift."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 8192
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
