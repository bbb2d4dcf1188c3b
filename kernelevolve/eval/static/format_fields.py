"""Attributes read by name inside str.format fields.

``"{0.sys.modules[kernelevolve.eval.launch_replay]._State.mode}".format(torch)`` is a getattr and
getitem chain by names given as text: it walks from any object to the runner's modules and reads their
state (`tests/adversarial/hacks/format_field_reads_runner_state.py`) without an attribute node the
attribute-name rules read. So a format string may name its fields only by position or keyword, with no
``.attr`` or ``[key]`` part (write an f-string, whose expressions are checked as code), and ``.format`` /
``.format_map`` may be read only off a string literal, whose fields the checks can see.
"""

from __future__ import annotations

import ast
import string
from collections.abc import Callable

IssueSink = Callable[[str, ast.AST, str], None]
FORMAT_METHODS = frozenset({"format", "format_map"})


def check_format_read(node: ast.Attribute, issue: IssueSink) -> None:
    """``X.format`` / ``X.format_map`` (called or taken as a value)."""
    template = node.value
    if not (isinstance(template, ast.Constant) and isinstance(template.value, str)):
        issue(
            "dynamic_code",
            node,
            f".{node.attr} on a string the source does not spell: its fields read attributes by name "
            "(format a string literal, or use an f-string)",
        )
        return
    for field in _field_names(template.value):
        if "." in field or "[" in field:
            issue(
                "introspection",
                node,
                f"format field {{{field}}} reads attributes or items by name: use an f-string",
            )


def _field_names(text: str) -> list[str]:
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return []  # str.format raises on it too
    names = [name for _, name, spec, _ in parsed if name is not None]
    for _, _, spec, _ in parsed:  # nested fields in a format spec: "{0:{1.attr}}"
        names += _field_names(spec) if spec else []
    return names
