"""Batched matrix product C[b] = A[b] @ B[b]; the same form as KernelBench level 1 problem 3."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.bmm of a (batch, m, k) and a (batch, k, n) tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


batch_size = 128
m = 512
k = 1024
n = 2048


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []
