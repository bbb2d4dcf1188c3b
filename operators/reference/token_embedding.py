"""Token embedding lookup of a language model: one table row gathered per token id."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Embedding(vocab_size, hidden) applied to (batch, seq_len) token ids."""

    def __init__(self, vocab_size: int, hidden: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embed(tokens)


vocab_size = 128256
hidden = 4096
batch_size = 4
seq_len = 2048


def get_inputs():
    return [torch.randint(0, vocab_size, (batch_size, seq_len))]


def get_init_inputs():
    return [vocab_size, hidden]
