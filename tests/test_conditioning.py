"""The reference against an fp64 run of itself: tolerances fp32 cannot meet are named, not searched."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kernelevolve.eval.conditioning import main, reference_against_fp64
from kernelevolve.types import KernelSpec
from tests.numerics_specs import CANCELLING, ELEMENTWISE


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
