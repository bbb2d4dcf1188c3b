"""The reference with `Model.forward` replaced by the code of a rewritten graph; the rest kept as written.

Only `forward`'s lines change, so `__init__` (hence the parameters and their initialisation order),
the size constants that shapes rebind, `get_inputs` and `get_init_inputs` are the reference's. FX
writes plain torch calls; the few globals its code may name beyond `torch` (`inf`, `nan`, `device`)
are defined at the top of the new forward, and any other makes the rewrite fail rather than a
candidate that cannot load.
"""

from __future__ import annotations

import ast
import builtins
import textwrap
from typing import Any

from kernelevolve.variation.rewrite.trace import RewriteError

_LOCAL_GLOBALS = {"inf": "float('inf')", "nan": "float('nan')", "device": "torch.device"}


def forward_code(graph_module: Any, namespace: Any) -> str:
    """`def forward(self, ...)` for the graph, naming only torch, builtins and what it defines;
    `namespace`: the reference module, which must call torch `torch`."""
    import torch

    if getattr(namespace, "torch", None) is not torch:
        raise RewriteError(
            "the reference does not import torch as `torch`, which the rewritten forward names"
        )
    code = graph_module.graph.python_code(root_module="self")
    tree = ast.parse(code.src)
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    bound = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    bound |= {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    used = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    free = sorted(used - bound - set(dir(builtins)) - {"torch"})
    unknown = [name for name in free if name not in _LOCAL_GLOBALS]
    if unknown:
        raise RewriteError(f"the rewritten forward names {', '.join(unknown)}, which the reference lacks")
    prologue = [ast.parse(f"{name} = {_LOCAL_GLOBALS[name]}").body[0] for name in free]
    function.body[0:0] = prologue
    return ast.unparse(function)


def replace_forward(source: str, forward: str) -> str:
    """`source` with the forward of its `class Model` replaced by `forward` (a def at column 0)."""
    tree = ast.parse(source)
    model = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == "Model"), None)
    if model is None:
        raise RewriteError("the reference has no class Model")
    old = next((s for s in model.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
    if old is None or old.end_lineno is None:
        raise RewriteError("the reference's Model has no forward")
    lines = source.splitlines(keepends=True)
    start = min([old.lineno, *(d.lineno for d in old.decorator_list)]) - 1
    indent = " " * old.col_offset
    new = textwrap.indent(forward.rstrip("\n") + "\n", indent)
    return "".join([*lines[:start], new, *lines[old.end_lineno :]])
