"""Vision Transformer patch embedding: non-overlapping patches projected by a strided convolution,
flattened to (batch, patches, hidden) tokens."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d(3, hidden, patch, stride=patch), then flatten(2).transpose(1, 2)."""

    def __init__(self, hidden: int, patch: int):
        super().__init__()
        self.proj = nn.Conv2d(3, hidden, kernel_size=patch, stride=patch)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.proj(images).flatten(2).transpose(1, 2)


batch_size = 64
image_size = 224
patch = 16
hidden = 768


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [hidden, patch]
