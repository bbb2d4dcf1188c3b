"""The reference against an fp64 run of itself: tolerances fp32 cannot meet are named, not searched."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kernelevolve.eval.conditioning import main, reference_against_fp64
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


def test_a_cancelling_sum_misses_its_own_tolerance() -> None:
    result = reference_against_fp64(CANCELLING, CANCELLING.shapes[0], "cpu")
    assert not result.reference_meets_tolerance
    assert result.elements == 4 and 0 < result.out_of_tolerance <= 4
    assert result.worst_ratio > 1 and result.max_abs_error > 1e-4


def test_an_elementwise_reference_meets_it() -> None:
    result = reference_against_fp64(ELEMENTWISE, ELEMENTWISE.shapes[0], "cpu")
    assert result.reference_meets_tolerance and result.elements == 4 * 65536
    assert result.worst_ratio < 1e-2


@pytest.mark.parametrize(("spec", "code"), [(CANCELLING, 1), (ELEMENTWISE, 0)])
def test_cli_verdict_and_exit_code(
    spec: KernelSpec, code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"{spec.name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": spec.name, "reference_code": spec.reference_source, "atol": 1e-4, "rtol": 1e-4}
        )
    )
    assert main([str(path)]) == code
    out = capsys.readouterr().out
    assert ("MISSES" in out) == bool(code) and spec.name in out
