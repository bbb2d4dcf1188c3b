"""Rotary position embedding applied to queries (Llama's apply_rotary_pos_emb, rotate-half form):
q * cos + rotate_half(q) * sin, with (seq_len, head_dim) cos and sin tables, computed in float32 and
rounded once to the queries' dtype (as fused RoPE kernels do; bf16 rounding after each op would leave
the reference itself two bf16 steps from the exact result)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """RoPE on (batch, heads, seq_len, head_dim) queries; the tables broadcast over batch and heads."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = q.shape[-1] // 2
        h = q.float()
        rotated = torch.cat((-h[..., half:], h[..., :half]), dim=-1)
        return (h * cos.float() + rotated * sin.float()).to(q.dtype)


batch_size = 1
num_heads = 32
seq_len = 4096
head_dim = 128
rope_theta = 500000.0


def get_inputs():
    inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    q = torch.randn(batch_size, num_heads, seq_len, head_dim)
    return [q, angles.cos(), angles.sin()]


def get_init_inputs():
    return []
