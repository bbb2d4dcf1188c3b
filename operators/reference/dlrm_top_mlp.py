"""DLRM's top MLP: the concatenated dense embedding and pairwise interactions through Linear + ReLU
layers to one click logit, then a sigmoid."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear + ReLU over widths (w1, w1, w2, w3), then Linear(w3, 1) and a sigmoid."""

    def __init__(self, in_features: int, width1: int, width2: int, width3: int):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(in_features, width1),
            nn.ReLU(),
            nn.Linear(width1, width1),
            nn.ReLU(),
            nn.Linear(width1, width2),
            nn.ReLU(),
            nn.Linear(width2, width3),
            nn.ReLU(),
            nn.Linear(width3, 1),
            nn.Sigmoid(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


batch_size = 65536
in_features = 479
width1 = 1024
width2 = 512
width3 = 256


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, width1, width2, width3]
