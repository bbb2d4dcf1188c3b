"""Top-k sampling filter of LLM decoding: logits outside each row's k largest set to -inf, then the
temperature-scaled softmax over the vocabulary."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """softmax(where(logits >= k-th largest, logits, -inf) / temperature) over the vocabulary."""

    def __init__(self, k: int, temperature: float = 0.7):
        super().__init__()
        self.k = k
        self.temperature = temperature

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        kth = torch.topk(logits, self.k, dim=-1).values[:, -1:]
        kept = logits.masked_fill(logits < kth, float("-inf"))
        return torch.softmax(kept.float() / self.temperature, dim=-1)


batch_size = 64
vocab_size = 128256
k = 50


def get_inputs():
    return [torch.randn(batch_size, vocab_size)]


def get_init_inputs():
    return [k]
