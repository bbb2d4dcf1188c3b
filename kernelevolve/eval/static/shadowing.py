"""Names that rebind an import: the checks resolve a name by the module's imports alone.

``Module.resolve`` reads ``triton`` as the module wherever it is spelled, so a parameter named ``triton``
holding any callable passed as Triton's (a callee the keyword rules trust with ``**kwargs``:
`tests/adversarial/hacks/strict_lazy_copy_via_dispatch_mode.py` forwarded a mode's ops so), and a local
``torch`` would pass as PyTorch. Rather than track scopes, a name an import binds may be bound by nothing
else: no parameter, assignment, loop or ``with`` target, definition, ``except`` or match capture (a
module-level alias of a library name, ``Event = torch.cuda.Event``, is an import by another spelling).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from kernelevolve.eval.static.module import Module

IssueSink = Callable[[str, ast.AST, str], None]


def check_rebound_imports(mod: Module, issue: IssueSink) -> None:
    aliasing = {
        id(t)
        for stmt in mod.tree.body
        if isinstance(stmt, ast.Assign) and mod.resolve(stmt.value)
        for t in stmt.targets
    }
    for node, name in _bindings(mod.tree):
        if name in mod.aliases and id(node) not in aliasing:
            issue(
                "dynamic_code",
                node,
                f"{name} rebinds an imported name, which the checks read as {mod.aliases[name]}: rename it",
            )


def _bindings(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            yield node, node.arg
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            yield node, node.id
        elif isinstance(node, _NAMED) and isinstance(getattr(node, "name", None), str):
            yield node, str(getattr(node, "name", ""))
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node, node.rest


# nodes whose `name` binds: definitions, `except ... as name`, match captures
_NAMED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)
