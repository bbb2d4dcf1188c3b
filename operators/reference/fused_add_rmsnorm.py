"""Residual add then RMSNorm, fused in inference engines (vLLM's fused_add_rms_norm): the block's output
is added to the residual stream and the sum normalised for the next layer. Returns both."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """(weight * rmsnorm(x + residual), x + residual), the statistics in float32."""

    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        total = x + residual
        h = total.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(total.dtype), total


num_tokens = 8192
hidden = 4096


def get_inputs():
    return [torch.randn(num_tokens, hidden), torch.randn(num_tokens, hidden)]


def get_init_inputs():
    return [hidden]
