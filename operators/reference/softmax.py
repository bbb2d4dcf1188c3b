"""Softmax over dim=1 of a (batch_size, dim) tensor; the same form as KernelBench level 1 problem 23."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Row softmax: every row of the input becomes a probability distribution."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 8192
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
