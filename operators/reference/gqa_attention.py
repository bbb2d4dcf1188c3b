"""Grouped-query causal attention (Llama 3, Mistral): each group of query heads shares one key/value head;
the shared heads are repeated to the query heads' count, then causal attention."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """K and V repeat_interleave'd from kv_heads to the query heads, then causal SDPA."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        groups = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


batch_size = 2
num_heads = 32
kv_heads = 8
seq_len = 2048
head_dim = 128


def get_inputs():
    q = torch.randn(batch_size, num_heads, seq_len, head_dim)
    k = torch.randn(batch_size, kv_heads, seq_len, head_dim)
    v = torch.randn(batch_size, kv_heads, seq_len, head_dim)
    return [q, k, v]


def get_init_inputs():
    return []
