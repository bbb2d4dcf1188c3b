"""How tables write their values: one spelling for every table, summary, report and CLI (runs and sweeps)."""

from __future__ import annotations


def first_line(text: str) -> str:
    """The first non-blank line, at most 200 characters (an error's or a stop reason's gist)."""
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return lines[0][:200] if lines else ""


def format_percent(value: float | None) -> str:
    return f"{100 * value:.0f}%" if value is not None else "-"


def format_speedup(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" if value >= 0.1 else f"{value:.2g}x"


def format_ms(value: float | None) -> str:
    return f"{value:.4g}" if value is not None else "-"


def format_own(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")
