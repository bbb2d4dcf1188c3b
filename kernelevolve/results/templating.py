"""Jinja2 for the HTML reports: the templates under results/templates/, autoescaped, with the tables'
value filters (`ms`, `x`, `pct`, `own`, `first_line`). A report is one self-contained page: its style and
script (sortable tables, the search graph's pan, zoom and hover) are inlined, nothing is fetched when
it is viewed."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from kernelevolve.results.format import first_line, format_ms, format_own, format_percent, format_speedup

TEMPLATES = Path(__file__).resolve().parent / "templates"


@functools.lru_cache(maxsize=1)
def environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=jinja2.select_autoescape(["html.j2"], default_for_string=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        ms=format_ms,
        x=format_speedup,
        pct=format_percent,
        own=format_own,
        first_line=first_line,
        sortkey=sort_key,
    )
    return env


def sort_key(value: Any) -> str:
    """A table cell's `data-sort` value: numbers as numbers (None sorts first), anything else as text."""
    if value is None:
        return "-inf"
    if isinstance(value, bool):
        return str(int(value))
    return repr(float(value)) if isinstance(value, (int, float)) else str(value)


def render(template: str, **context: Any) -> str:
    """`template` (a file under results/templates/) rendered with `context`."""
    return str(environment().get_template(template).render(**context))
