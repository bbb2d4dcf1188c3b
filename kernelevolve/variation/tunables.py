"""Find and rewrite the tunable parameters of a kernel's source.

Two kinds are found, both by tokenizing/parsing the source rather than by text search:
  * declared: a module-level ``NAME = literal  # tune: a, b, c`` (templates and seeds write these);
  * inferred: in any candidate (LLM-written, compiler-made), module-level power-of-two constants named
    like block/tile sizes, and integer ``num_warps=`` / ``num_stages=`` keywords in calls.
Each tunable knows the exact source span of its literal, so an edit changes that literal only.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from typing import Any

_TUNE_COMMENT = re.compile(r"#\s*tune:\s*(.+)$")
_BLOCKISH_NAME = re.compile(r"(BLOCK|TILE|GROUP|SPLIT|CHUNK|WARPS|STAGES|VEC)", re.IGNORECASE)
_LAUNCH_KEYWORDS = {"num_warps": (1, 2, 4, 8, 16), "num_stages": (1, 2, 3, 4, 5)}


@dataclass(frozen=True)
class Tunable:
    name: str  # constant name, or "<keyword>@<line>" for a launch keyword
    value: Any
    choices: tuple[Any, ...]
    line: int  # 1-based
    col: int  # 0-based start column of the literal
    end_col: int
    declared: bool  # True when the source lists the choices in a tune comment


def _power_of_two_neighbours(value: int, low: int = 1, high: int = 1 << 14) -> tuple[int, ...]:
    choices = {value}
    for factor in (0.25, 0.5, 2, 4):
        candidate = int(value * factor)
        if low <= candidate <= high and candidate & (candidate - 1) == 0:
            choices.add(candidate)
    return tuple(sorted(choices))


def _tune_comments(source: str) -> dict[int, tuple[Any, ...]]:
    """line -> declared choices, from `# tune:` comments."""
    comments: dict[int, tuple[Any, ...]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return comments
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        match = _TUNE_COMMENT.search(token.string)
        if not match:
            continue
        try:
            parsed = ast.literal_eval(f"({match.group(1).strip()},)")
        except (ValueError, SyntaxError):
            continue
        comments[token.start[0]] = tuple(parsed)
    return comments


def find_tunables(source: str) -> list[Tunable]:
    """All tunables in source order; empty for source that does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    declared = _tune_comments(source)
    found: list[Tunable] = []
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            continue
        if not isinstance(node.value, ast.Constant) or node.value.end_col_offset is None:
            continue
        name, value = node.targets[0].id, node.value.value
        line = node.value.lineno
        if line in declared:
            choices = declared[line] if value in declared[line] else (value, *declared[line])
            found.append(
                Tunable(name, value, choices, line, node.value.col_offset, node.value.end_col_offset, True)
            )
        elif (
            isinstance(value, int)
            and not isinstance(value, bool)
            and value > 0
            and value & (value - 1) == 0
            and name.isupper()
            and _BLOCKISH_NAME.search(name)
        ):
            choices = _power_of_two_neighbours(value)
            found.append(
                Tunable(name, value, choices, line, node.value.col_offset, node.value.end_col_offset, False)
            )
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        for keyword in call.keywords:
            if keyword.arg not in _LAUNCH_KEYWORDS or not isinstance(keyword.value, ast.Constant):
                continue
            value = keyword.value.value
            if not isinstance(value, int) or keyword.value.end_col_offset is None:
                continue
            choices = tuple(sorted({value, *_LAUNCH_KEYWORDS[keyword.arg]}))
            found.append(
                Tunable(
                    f"{keyword.arg}@{keyword.value.lineno}",
                    value,
                    choices,
                    keyword.value.lineno,
                    keyword.value.col_offset,
                    keyword.value.end_col_offset,
                    False,
                )
            )
    return sorted(found, key=lambda t: (t.line, t.col))


def current_values(source: str) -> dict[str, Any]:
    return {t.name: t.value for t in find_tunables(source)}


def apply_values(source: str, values: dict[str, Any]) -> str:
    """Rewrite the literals of the named tunables; unknown names raise KeyError."""
    tunables = {t.name: t for t in find_tunables(source)}
    unknown = sorted(set(values) - set(tunables))
    if unknown:
        raise KeyError(f"no tunable(s) {unknown} in source; found {sorted(tunables)}")
    lines = source.splitlines(keepends=True)
    # Edit right to left within a line so earlier column offsets stay valid.
    for name in sorted(values, key=lambda n: (tunables[n].line, -tunables[n].col)):
        tunable = tunables[name]
        text = lines[tunable.line - 1]
        # ast columns are UTF-8 byte offsets; kernel sources are ASCII in practice, so guard rather than convert.
        if not text.isascii():
            raise ValueError(f"line {tunable.line} is not ASCII; cannot edit tunable {name}")
        lines[tunable.line - 1] = text[: tunable.col] + repr(values[name]) + text[tunable.end_col :]
    return "".join(lines)
