"""Specs whose fp32 reference is ill- or well-conditioned at 1e-4 (conditioning and baseline accuracy tests)."""

from __future__ import annotations

from kernelevolve.types import KernelSpec

_TEMPLATE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {body}


def get_inputs():
    return [torch.rand(4, 65536) * 100]


def get_init_inputs():
    return []
"""
# Sums that cancel to about zero: fp32 rounding of values near 100 is far above atol 1e-4.
CANCELLING = KernelSpec(
    name="cancelling_sum",
    reference_source=_TEMPLATE.format(body="(x - x.mean()).sum(dim=1)"),
    atol=1e-4,
    rtol=1e-4,
)
ELEMENTWISE = KernelSpec(
    name="relu_scale",
    reference_source=_TEMPLATE.format(body="torch.relu(x - 50) * 0.5"),
    atol=1e-4,
    rtol=1e-4,
)
