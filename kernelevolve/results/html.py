"""Pieces of the HTML reports outside their templates: matplotlib figures as base64 PNGs (the `report`
extra; without it a figure is a note saying so) and the atomic write. Run reports (`report.py`) and the
bench's sweep reports use these; the pages themselves are templates/*.html.j2."""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def escape(value: Any) -> str:
    return html.escape(str(value))


def load_plots() -> Any:
    try:
        from kernelevolve.results import report_plots
    except ImportError as exc:
        log.warning("report without plots: %s (install the `report` extra: matplotlib)", exc)
        return None
    return report_plots


def figure(plots: Any, draw: Callable[[Any], str], alt: str) -> str:
    if plots is None:
        return f"<p class='note'>[{escape(alt)}: plots need matplotlib, the `report` extra]</p>"
    try:
        return f"<img alt='{escape(alt)}' src='data:image/png;base64,{draw(plots)}'>"
    except Exception as exc:  # a broken plot must not cost the rest of the report
        log.warning("plot %r failed: %s", alt, exc, exc_info=True)
        return f"<p class='note'>[{escape(alt)} failed: {escape(type(exc).__name__)}: {escape(exc)}]</p>"


def write_atomic(path: Path, text: str) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
