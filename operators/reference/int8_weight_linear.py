"""Weight-only int8 linear layer (W8A16): activations times dequantised int8 weights, x @ (q * s)^T."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.linear of (tokens, in) activations with int8 (out, in) weights scaled per output channel."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return F.linear(x, weight.to(x.dtype) * scale[:, None])


num_tokens = 2048
in_features = 4096
out_features = 11008


def get_inputs():
    weight = torch.randint(-127, 128, (out_features, in_features), dtype=torch.int8)
    return [torch.randn(num_tokens, in_features), weight, torch.rand(out_features) / 127]


def get_init_inputs():
    return []
