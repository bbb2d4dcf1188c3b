"""Masked attention softmax of a GPT-style decoder: the upper triangle of each (seq, seq) score matrix
set to -inf, then softmax over keys (the unfused attention path of GPT-2)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """softmax(scores masked above the diagonal) over the last dimension of (batch, heads, seq, seq)."""

    def __init__(self):
        super().__init__()

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        seq = scores.shape[-1]
        future = torch.ones(seq, seq, dtype=torch.bool, device=scores.device).triu(1)
        return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)


batch_size = 8
num_heads = 12
seq_len = 1024


def get_inputs():
    return [torch.randn(batch_size, num_heads, seq_len, seq_len)]


def get_init_inputs():
    return []
