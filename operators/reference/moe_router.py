"""Mixture-of-experts routing (Mixtral): router logits from a linear gate, softmax over experts, the
top-k experts kept and their weights renormalised, scattered into a dense (tokens, experts) matrix of
combine weights (zeros for experts a token does not use)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Dense top-k combine weights of a softmax router (the gate and softmax in float32)."""

    def __init__(self, hidden: int, num_experts: int, top_k: int):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(hidden, num_experts, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        probs = torch.softmax(F.linear(x.float(), self.gate.weight.float()), dim=-1)
        weights, experts = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return torch.zeros_like(probs).scatter(1, experts, weights)


num_tokens = 8192
hidden = 4096
num_experts = 8
top_k = 2


def get_inputs():
    return [torch.randn(num_tokens, hidden)]


def get_init_inputs():
    return [hidden, num_experts, top_k]
