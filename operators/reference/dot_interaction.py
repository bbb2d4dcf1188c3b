"""DLRM feature interaction: all pairwise dot products of F feature embeddings, strict upper triangle.

features (batch, F, D) -> (batch, F * (F - 1) / 2), pairs (i, j) with i < j in row-major order.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Gram matrix per sample via bmm, then the entries above the diagonal."""

    def __init__(self):
        super().__init__()

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        num = features.size(1)
        gram = torch.bmm(features, features.transpose(1, 2))
        rows, cols = torch.triu_indices(num, num, offset=1, device=features.device)
        return gram[:, rows, cols]


batch_size = 16384
num_features = 27
embed_dim = 128


def get_inputs():
    return [torch.randn(batch_size, num_features, embed_dim)]


def get_init_inputs():
    return []
