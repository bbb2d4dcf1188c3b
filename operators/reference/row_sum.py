"""Sum of each row of a 2-D tensor, kept as a column; the same form as KernelBench level 1 problem 47."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.sum over dimension `dim` with keepdim=True."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 4096
dim1 = 32768
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim1)]


def get_init_inputs():
    return [reduce_dim]
