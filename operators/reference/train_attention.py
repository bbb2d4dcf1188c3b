"""Causal multi-head attention (scaled dot product), for training: q, k and v need gradients."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """softmax(q @ k^T / sqrt(head_dim) + causal mask) @ v for (batch, heads, seq_len, head_dim) tensors."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


batch_size = 4
num_heads = 16
seq_len = 2048
head_dim = 128


def get_inputs():
    shape = (batch_size, num_heads, seq_len, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
