"""Log-softmax along a chosen dimension (default 1); the same form as KernelBench level 1 problem 24."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """log(softmax(x)) along `dim`, computed stably by PyTorch."""

    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=self.dim)


batch_size = 8192
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
