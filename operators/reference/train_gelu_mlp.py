"""A transformer MLP block, Linear -> GELU (tanh) -> Linear, for training: x and every weight and bias need gradients."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """fc2(gelu(fc1(x), approximate="tanh")), as in GPT-2's MLP."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


num_tokens = 4096
dim = 1024
hidden = 4096


def get_inputs():
    return [torch.randn(num_tokens, dim)]


def get_init_inputs():
    return [dim, hidden]
