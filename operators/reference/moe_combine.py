"""Mixture-of-experts combine: each expert output row scaled by its routing weight and added back into
its token's row (a scatter-add; each token receives top_k rows)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """index_add of weight-scaled (tokens * top_k, hidden) expert outputs into (tokens, hidden)."""

    def __init__(self, num_tokens: int):
        super().__init__()
        self.num_tokens = num_tokens

    def forward(self, expert_out: torch.Tensor, token_ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(self.num_tokens, expert_out.shape[1], dtype=torch.float32, device=expert_out.device)
        out.index_add_(0, token_ids, expert_out.float() * weights.float()[:, None])
        return out.to(expert_out.dtype)


num_tokens = 8192
hidden = 4096
top_k = 2


def get_inputs():
    experts = torch.randint(0, 8, (num_tokens * top_k,))
    token_ids = torch.argsort(experts, stable=True) // top_k
    return [torch.randn(num_tokens * top_k, hidden), token_ids, torch.rand(num_tokens * top_k)]


def get_init_inputs():
    return [num_tokens]
