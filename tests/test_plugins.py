"""Plug-ins through entry point groups: registered by name, imported on first use, and a missing one
(the bench not installed) is one line naming it."""

from __future__ import annotations

import importlib.metadata
from dataclasses import replace
from typing import Any

import pytest

from kernelevolve.platforms import Platform, load_platform
from kernelevolve.registry import PluginUnavailableError, Registry, UnknownNameError
from kernelevolve.specs.loading import SpecError, resolve_spec
from kernelevolve.specs.sources import SPEC_SOURCES, split_source
from kernelevolve.types import KernelSpec


class _Point:
    """An installed package's entry point, stood in for."""

    def __init__(self, name: str, load: Any, value: str = "some.module:factory") -> None:
        self.name, self.value, self._load = name, value, load

    def load(self) -> Any:
        return self._load()


def _missing_module() -> Any:
    raise ModuleNotFoundError("No module named 'kernelevolve.bench'")


def _declare(
    monkeypatch: pytest.MonkeyPatch, group: str, *points: _Point, registry: Registry[Any] | None = None
) -> None:
    """Installed packages declare `points` in `group`; a factory `registry` already imported for one of
    their names (an earlier test's) is forgotten for this test."""
    for point in points if registry is not None else ():
        monkeypatch.delitem(registry._factories, point.name, raising=False)
    real = importlib.metadata.entry_points

    def entry_points(group: str | None = None, **kw: Any) -> Any:
        return list(points) if group == declared else real(group=group, **kw)

    declared = group
    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)


def test_a_declared_factory_is_imported_when_first_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[str] = []
    registry: Registry[int] = Registry("number", group="test.numbers")
    _declare(monkeypatch, "test.numbers", _Point("seven", lambda: loads.append("seven") or (lambda: 7)))
    assert registry.names() == ["seven"] and loads == []
    assert registry.create("seven") == 7 and loads == ["seven"]
    registry.get("seven")
    assert loads == ["seven"]  # once
    with pytest.raises(UnknownNameError, match="valid names: seven"):
        registry.get("eight")


def test_a_declared_factory_that_cannot_be_imported_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    registry: Registry[int] = Registry("number", group="test.numbers")
    _declare(monkeypatch, "test.numbers", _Point("seven", _missing_module, "kernelevolve.bench.x:seven"))
    with pytest.raises(PluginUnavailableError) as raised:
        registry.get("seven")
    message = str(raised.value)
    assert "\n" not in message and "'seven'" in message and "kernelevolve.bench" in message


# ----------------------------------------------------------------------------------- spec sources
def test_split_source() -> None:
    assert split_source("kernelbench:1/19") == ("kernelbench", "1/19")
    assert split_source("KB:L1/19") == ("kb", "L1/19")
    assert split_source("softmax") is None and split_source("dir/op.yaml") is None


def test_a_spec_source_gets_its_argument_and_the_config(add_spec: KernelSpec) -> None:
    seen: list[tuple[str, str, Any]] = []

    def toy(argument: str, platform: Platform, config: Any) -> KernelSpec:
        seen.append((argument, platform.name, config.get("toy")))
        return replace(add_spec, name=f"toy_{argument}")

    SPEC_SOURCES.register("toy")(toy)
    try:
        spec = resolve_spec("toy:3", load_platform("cpu"), {"toy": {"size": 4}}, validate=False)
    finally:
        SPEC_SOURCES._factories.pop("toy")
    assert spec.name == "toy_3" and seen == [("3", "cpu", {"size": 4})]


def test_an_unknown_or_missing_source_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = load_platform("cpu")
    with pytest.raises(SpecError, match=r"^'nope:1': no spec source 'nope' is installed \(spec sources: "):
        resolve_spec("nope:1", cpu)
    _declare(
        monkeypatch,
        "kernelevolve.spec_sources",
        _Point("kernelbench", _missing_module, "kernelevolve.bench.kernelbench.source:resolve"),
        registry=SPEC_SOURCES,
    )
    with pytest.raises(SpecError) as raised:
        resolve_spec("kernelbench:1/19", cpu)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("'kernelbench:1/19': spec source 'kernelbench'")
    assert "No module named 'kernelevolve.bench'" in message


# ----------------------------------------------------------------------------------- second judges
def test_verify_without_the_judges_plug_in_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernelevolve.verify import SECOND_JUDGES, UsageError, main, parse_args

    _declare(
        monkeypatch,
        "kernelevolve.judges",
        _Point(
            "kernelbench", _missing_module, "kernelevolve.bench.kernelbench.judge.second_judge:second_judge"
        ),
        registry=SECOND_JUDGES,
    )
    with pytest.raises(UsageError) as raised:
        parse_args(["k.py", "+spec=softmax", "kernelbench.judge=/kb"])
    assert "\n" not in str(raised.value) and "kernelbench.judge needs the kernelbench second judge" in str(
        raised.value
    )
    assert main(["k.py", "+spec=softmax", "kernelbench.judge=/kb"]) == 2
    assert "No module named 'kernelevolve.bench'" in capsys.readouterr().err


# ----------------------------------------------------------------------------------- folder reports
def test_a_sweep_folder_needs_the_reports_plug_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from kernelevolve.results.report import FOLDER_REPORTS, ReportError, write_report

    (tmp_path / "summary.json").write_text("{}")
    _declare(
        monkeypatch,
        "kernelevolve.reports",
        _Point("sweep", _missing_module, "kernelevolve.bench.sweep.report:write_folder_report"),
        registry=FOLDER_REPORTS,
    )
    with pytest.raises(ReportError, match="neither a run directory"):
        write_report(tmp_path)
