"""Language-model loss: mean cross-entropy of (tokens, vocab) logits against next-token targets."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.cross_entropy with mean reduction (log-softmax over the vocabulary, the target's entry)."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets)


num_tokens = 4096
vocab_size = 128256


def get_inputs():
    return [torch.randn(num_tokens, vocab_size), torch.randint(0, vocab_size, (num_tokens,))]


def get_init_inputs():
    return []
