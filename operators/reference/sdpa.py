"""Scaled dot-product attention without a mask, written out as matmul -> softmax -> matmul."""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """softmax(q @ k^T / sqrt(head_dim)) @ v for (batch, heads, seq_len, head_dim) tensors."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scale = 1.0 / math.sqrt(q.size(-1))
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale
        weights = torch.softmax(scores, dim=-1)
        return torch.matmul(weights, v)


batch_size = 4
num_heads = 32
seq_len = 2048
head_dim = 128


def get_inputs():
    shape = (batch_size, num_heads, seq_len, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
