"""Jagged mean pooling: each sample's variable-length run of rows (values + lengths) averaged, as a
user's history sequence is pooled in sequential recommenders; an empty run gives zeros."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.segment_reduce in mean mode over a jagged (total_rows, dim) tensor, zeros for empty runs."""

    def __init__(self):
        super().__init__()

    def forward(self, values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return torch.segment_reduce(values, "mean", lengths=lengths, unsafe=True, initial=0.0)


batch_size = 2048
max_len = 256
embed_dim = 256


def get_inputs():
    lengths = torch.randint(0, max_len + 1, (batch_size,), device="cpu")
    values = torch.randn(int(lengths.sum()), embed_dim)
    return [values, lengths.to(values.device)]


def get_init_inputs():
    return []
