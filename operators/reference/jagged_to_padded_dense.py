"""Jagged rows (values + offsets) to a zero-padded dense (batch, max_len, dim) tensor, as in recommenders.

Row b owns values[offsets[b]:offsets[b + 1]]; rows longer than max_len are truncated.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Scatter each variable-length sequence into a fixed-length slot, padding with zeros."""

    def __init__(self, max_len: int):
        super().__init__()
        self.max_len = max_len

    def forward(self, values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        lengths = offsets[1:] - offsets[:-1]
        if values.shape[0] == 0:  # every row empty (small batches draw it): nothing to gather from
            return values.new_zeros(lengths.shape[0], self.max_len, values.shape[1])
        positions = torch.arange(self.max_len, device=values.device)
        valid = positions[None, :] < lengths[:, None]
        rows = (offsets[:-1, None] + positions[None, :]).clamp(0, max(values.shape[0] - 1, 0))
        gathered = values[rows]
        return torch.where(
            valid[..., None], gathered, torch.zeros((), dtype=values.dtype, device=values.device)
        )


batch_size = 1024
max_len = 512
embed_dim = 128


def get_inputs():
    # Lengths are drawn on the host so the total is a plain int whatever the default device is.
    lengths = torch.randint(0, max_len + 1, (batch_size,), device="cpu")
    offsets = torch.zeros(batch_size + 1, dtype=torch.int64, device="cpu")
    offsets[1:] = torch.cumsum(lengths, 0)
    values = torch.randn(int(offsets[-1]), embed_dim)
    return [values, offsets.to(values.device)]


def get_init_inputs():
    return [max_len]
