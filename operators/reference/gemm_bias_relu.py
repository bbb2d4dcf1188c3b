"""A linear layer followed by ReLU: relu(x @ W^T + b), the MLP building block."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear(in_features, out_features) then ReLU."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


batch_size = 8192
in_features = 8192
out_features = 8192


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
