"""Mixture-of-experts dispatch: token rows gathered into expert order (each token once per expert it is
routed to), the permutation before the grouped expert GEMMs."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """index_select of (tokens, hidden) rows by a (tokens * top_k) routing order."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        return x.index_select(0, order)


num_tokens = 8192
hidden = 4096
top_k = 2


def get_inputs():
    experts = torch.randint(0, 8, (num_tokens * top_k,))
    order = torch.argsort(experts, stable=True) // top_k
    return [torch.randn(num_tokens, hidden), order]


def get_init_inputs():
    return []
