"""Paged KV-cache gather (vLLM-style paged attention): each sequence's cache blocks fetched from the
shared block pool by its block table, into a contiguous (batch, blocks * block_size, kv_heads, head_dim)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Index the (num_blocks, block_size, kv_heads, head_dim) pool with a (batch, blocks_per_seq) table."""

    def __init__(self):
        super().__init__()

    def forward(self, pool: torch.Tensor, block_table: torch.Tensor) -> torch.Tensor:
        gathered = pool[block_table]
        batch, blocks, block_size, heads, dim = gathered.shape
        return gathered.reshape(batch, blocks * block_size, heads, dim)


num_blocks = 8192
block_size = 16
kv_heads = 8
head_dim = 128
batch_size = 32
blocks_per_seq = 128


def get_inputs():
    table = torch.randint(0, num_blocks, (batch_size, blocks_per_seq))
    return [torch.randn(num_blocks, block_size, kv_heads, head_dim), table]


def get_init_inputs():
    return []
