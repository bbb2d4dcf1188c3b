"""Weight-only int8 dequantisation (W8A16 inference): int8 weights times their per-output-channel scales,
back to the activation dtype."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """(out_features, in_features) int8 weights times a (out_features,) scale, in the scale's dtype."""

    def __init__(self):
        super().__init__()

    def forward(self, weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return weight.to(scale.dtype) * scale[:, None]


out_features = 14336
in_features = 4096


def get_inputs():
    weight = torch.randint(-127, 128, (out_features, in_features), dtype=torch.int8)
    return [weight, torch.rand(out_features) / 127]


def get_init_inputs():
    return []
