"""Mean-pooled embedding bags in half precision, the sparse-feature lookup of DLRM-style recommenders.

Bag b averages the table rows named by indices[offsets[b]:offsets[b + 1]]; an empty bag gives zeros.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.EmbeddingBag in mean mode with a (batch_size + 1)-long offsets tensor."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, embedding_dim, mode="mean", include_last_offset=True)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.bag(indices, offsets)


num_embeddings = 4000000
embedding_dim = 128
batch_size = 8192
mean_bag_size = 12


def get_inputs():
    # Bag sizes are drawn on the host so the total is a plain int whatever the default device is.
    sizes = torch.randint(0, 2 * mean_bag_size + 1, (batch_size,), device="cpu")
    offsets = torch.zeros(batch_size + 1, dtype=torch.int64, device="cpu")
    offsets[1:] = torch.cumsum(sizes, 0)
    indices = torch.randint(0, num_embeddings, (int(offsets[-1]),))
    return [indices, offsets.to(indices.device)]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
