"""Every compiler capture made from here on, noted: (settings, config patches) of each."""

from __future__ import annotations

from typing import Any

import pytest

from kernelevolve.types import KernelSpec
from kernelevolve.variation.compiler import capture as capture_module
from kernelevolve.variation.compiler.capture import INDUCTORS_OWN, CaptureSettings


def spy_on_captures(
    monkeypatch: pytest.MonkeyPatch, device: str | None = None
) -> list[tuple[CaptureSettings, dict[str, Any]]]:
    """The list each capture appends its (settings, config patches) to; with `device`, every capture is
    made for it whatever the caller asked (a GPU platform's seeds rendered from CPU captures)."""
    made: list[tuple[CaptureSettings, dict[str, Any]]] = []
    real_capture = capture_module.capture

    def noted(
        spec: KernelSpec,
        shape: Any,
        asked_device: str,
        settings: CaptureSettings = INDUCTORS_OWN,
        config: Any = None,
    ) -> Any:
        made.append((settings, dict(config or {})))
        return real_capture(spec, shape, device or asked_device, settings, config)

    monkeypatch.setattr(capture_module, "capture", noted)
    return made
