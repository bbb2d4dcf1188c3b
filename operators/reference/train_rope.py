"""Rotary position embedding of queries and keys, for training: q and k need gradients (cos/sin are buffers)."""

import torch
import torch.nn as nn


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class Model(nn.Module):
    """q * cos + rotate_half(q) * sin (and k alike), HuggingFace LLaMA's apply_rotary_pos_emb."""

    def __init__(self, seq_len: int, head_dim: int, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return q * self.cos + rotate_half(q) * self.sin, k * self.cos + rotate_half(k) * self.sin


batch_size = 4
num_heads = 32
num_kv_heads = 8
seq_len = 4096
head_dim = 128


def get_inputs():
    q = torch.randn(batch_size, num_heads, seq_len, head_dim)
    k = torch.randn(batch_size, num_kv_heads, seq_len, head_dim)
    return [q, k]


def get_init_inputs():
    return [seq_len, head_dim]
