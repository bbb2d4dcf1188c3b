"""RMSNorm as Llama models run it in bf16: the statistics in float32, the result cast back before the
learned weight is applied (Hugging Face's LlamaRMSNorm)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """weight * (x / sqrt(mean(x^2) + eps)) with x upcast to float32 for the normalisation."""

    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


batch_size = 4
seq_len = 2048
hidden = 4096


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden]
