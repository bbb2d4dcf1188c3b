"""The HTML of a report page: one self-contained file, tables, and matplotlib figures as base64 PNGs
(the `report` extra; without it a figure is a note saying so). Run reports (`report.py`) and the bench's
sweep reports write their pages with these."""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.8em;overflow-x:auto;font-size:.82em}
img{max-width:100%;margin:.5em 0}.note{color:#777;font-size:.9em}
"""


def escape(value: Any) -> str:
    return html.escape(str(value))


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def page(title: str, sections: Sequence[str]) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"
        + "\n".join(sections)
        + "</body></html>\n"
    )


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
