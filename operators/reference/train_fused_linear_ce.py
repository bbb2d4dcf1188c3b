"""The LM head and its loss: cross-entropy of hidden @ weight^T, for training: hidden and weight need gradients."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.cross_entropy(hidden @ lm_head.weight^T, targets), mean over tokens; the logits never need to be kept."""

    def __init__(self, hidden: int, vocab: int):
        super().__init__()
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.lm_head(x), targets)


num_tokens = 4096
hidden = 2048
vocab = 32000


def get_inputs():
    return [torch.randn(num_tokens, hidden), torch.randint(0, vocab, (num_tokens,))]


def get_init_inputs():
    return [hidden, vocab]
