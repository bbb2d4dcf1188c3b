"""Kernels kept as modules (kernelevolve/variation/kernels/) render to the text their string literals had."""

from __future__ import annotations

import pytest

from tests.kernel_goldens import GOLDENS, cases

_CASES = cases()


@pytest.mark.parametrize("name", sorted(_CASES))
def test_renders_as_the_string_literals_did(name: str) -> None:
    assert _CASES[name] == (GOLDENS / f"{name}.txt").read_text()


def test_every_golden_is_a_case() -> None:
    assert sorted(p.stem for p in GOLDENS.glob("*.txt")) == sorted(_CASES)
