"""A checkout run without installing (a GPU machine given the working tree) still finds the plug-ins that
pyproject.toml declares, such as the bench's `kernelbench:` spec source."""

from __future__ import annotations

import sys

import pytest

from kernelevolve import registry


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib: Python 3.11+")
def test_entry_points_come_from_the_checkouts_pyproject_when_not_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.metadata as metadata

    def not_installed(name: str) -> metadata.Distribution:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", not_installed)
    points = registry._source_tree_entry_points("kernelevolve.spec_sources")
    assert points["kernelbench"].value == "kernelevolve.bench.kernelbench.source:resolve"
    assert registry._source_tree_entry_points("kernelevolve.no_such_group") == {}
