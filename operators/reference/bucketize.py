"""Dense-feature bucketization of a recommender: each float feature value replaced by the index of its
bucket among sorted boundaries (torch.bucketize, right=False), as an int64 id for an embedding table."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.bucketize of (batch, features) values against `num_boundaries` sorted boundaries."""

    def __init__(self, num_boundaries: int):
        super().__init__()
        self.register_buffer("boundaries", torch.linspace(-3.0, 3.0, num_boundaries))

    def forward(self, values: torch.Tensor) -> torch.Tensor:
        return torch.bucketize(values, self.boundaries)


batch_size = 65536
num_features = 13
num_boundaries = 1024


def get_inputs():
    return [torch.randn(batch_size, num_features)]


def get_init_inputs():
    return [num_boundaries]
