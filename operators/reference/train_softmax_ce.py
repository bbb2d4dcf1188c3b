"""Softmax cross-entropy over a vocabulary, mean over tokens, for training: the logits need gradients."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.cross_entropy(logits, targets): log-softmax over the vocabulary, the target's negative, averaged."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets)


num_tokens = 4096
vocab = 32000


def get_inputs():
    return [torch.randn(num_tokens, vocab), torch.randint(0, vocab, (num_tokens,))]


def get_init_inputs():
    return []
