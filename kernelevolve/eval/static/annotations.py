"""Annotations given as text: a string annotation is code to whatever evaluates it.

``typing.get_type_hints`` evaluates a string annotation with the module's globals and builtins, and in
Python 3.11 a callable passes its type check, so ``def f(x: "lambda: __import__('ctypes')")`` hands back a
function no rule read (`tests/adversarial/hacks/static_bypass_via_type_hints.py`). The evaluators are
banned by name (`rules.NAME_RULES`), and ``__annotations__`` may not be spelled; a kernel-language
decorator that reads its function's annotations may evaluate them too, so a string annotation may hold
only a type expression: names, attributes, subscripts, tuples and lists of them, constants and ``|``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

IssueSink = Callable[[str, ast.AST, str], None]
_TYPE_NODES = (
    ast.Expression,
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.List,
    ast.Constant,
    ast.Load,
)


def check_string_annotations(tree: ast.AST, issue: IssueSink) -> None:
    for annotation in _annotations(tree):
        for node in ast.walk(annotation):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and not type_expression(node.value)
            ):
                issue(
                    "dynamic_code",
                    node,
                    "a string annotation that is not a type expression is code given as text",
                )


def type_expression(text: str) -> bool:
    """Whether `text` is a type expression (or no expression at all, which nothing can evaluate)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) or isinstance(node, ast.BitOr):
            continue
        if not isinstance(node, _TYPE_NODES):
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and not type_expression(node.value):
            return False
    return True


def _annotations(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            yield node.annotation
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation
