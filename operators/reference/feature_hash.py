"""Sparse-id hashing of a recommender: raw 64-bit feature ids mixed and folded into a table's row range
(the hashing trick of DLRM's and TorchRec's feature processing)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """A multiplicative-xorshift mix of each id, then its remainder modulo the table size."""

    def __init__(self, num_buckets: int):
        super().__init__()
        self.num_buckets = num_buckets

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mixed = (ids ^ (ids >> 31)) * 0x7FB5D329728EA185
        mixed = mixed ^ (mixed >> 27)
        return torch.remainder(mixed, self.num_buckets)


batch_size = 65536
num_features = 26
ids_per_feature = 4
num_buckets = 40000000


def get_inputs():
    return [torch.randint(0, 2**62, (batch_size, num_features * ids_per_feature))]


def get_init_inputs():
    return [num_buckets]
