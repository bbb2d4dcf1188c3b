"""Weighted sum-pooled embedding bags (TorchRec's weighted sparse features): each looked-up row is scaled
by its per-sample weight before the bag's rows are summed."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.embedding_bag in sum mode with per_sample_weights and a (batch_size + 1)-long offsets tensor."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, embedding_dim))

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        return F.embedding_bag(
            indices, self.weight, offsets, mode="sum", per_sample_weights=weights, include_last_offset=True
        )


num_embeddings = 1000000
embedding_dim = 128
batch_size = 16384
mean_bag_size = 20


def get_inputs():
    sizes = torch.randint(0, 2 * mean_bag_size + 1, (batch_size,), device="cpu")
    offsets = torch.zeros(batch_size + 1, dtype=torch.int64, device="cpu")
    offsets[1:] = torch.cumsum(sizes, 0)
    total = int(offsets[-1])
    indices = torch.randint(0, num_embeddings, (total,))
    return [indices, offsets.to(indices.device), torch.rand(total)]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
