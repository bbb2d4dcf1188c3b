"""Segment reduction: rows of a (num_rows, dim) tensor summed into the segment each belongs to (sorted
segment ids, as a jagged batch's rows map to its samples in recommenders and graph networks)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """index_add of every row into its segment's row of a (num_segments, dim) zero tensor."""

    def __init__(self, num_segments: int):
        super().__init__()
        self.num_segments = num_segments

    def forward(self, values: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(self.num_segments, values.shape[1], dtype=values.dtype, device=values.device)
        return out.index_add(0, segment_ids, values)


num_rows = 262144
num_segments = 8192
dim = 128


def get_inputs():
    ids = torch.sort(torch.randint(0, num_segments, (num_rows,))).values
    return [torch.randn(num_rows, dim), ids]


def get_init_inputs():
    return [num_segments]
