"""The LM head and its loss in one: last hidden states through the output projection to vocabulary
logits, then the mean cross-entropy against the targets (what fused linear-cross-entropy kernels do
without keeping the (tokens, vocab) logits)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """cross_entropy(hidden @ W^T, targets), mean over tokens, with a bias-free (vocab, hidden) W."""

    def __init__(self, hidden: int, vocab_size: int):
        super().__init__()
        self.lm_head = nn.Linear(hidden, vocab_size, bias=False)

    def forward(self, hidden_states: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.lm_head(hidden_states)
        return F.cross_entropy(logits.float(), targets)


num_tokens = 4096
hidden = 4096
vocab_size = 128256


def get_inputs():
    return [torch.randn(num_tokens, hidden), torch.randint(0, vocab_size, (num_tokens,))]


def get_init_inputs():
    return [hidden, vocab_size]
