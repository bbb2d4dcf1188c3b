"""SwiGLU gate of a transformer MLP, for training: the gradient of the (gate | up) input."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """silu(gate) * up, the input's last dimension split into gate and up halves."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


num_tokens = 8192
hidden = 11008


def get_inputs():
    return [torch.randn(num_tokens, 2 * hidden)]


def get_init_inputs():
    return []
