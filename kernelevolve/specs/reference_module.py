"""Load a KernelBench-style reference module from source, with its size constants rebound.

Shapes are applied by rewriting the module's top-level assignments before it runs (not by
setattr afterwards), so constants derived from others (``bias_shape = (out_channels, 1, 1)``)
follow the change. The evaluation child and the driver both load references through here.
"""

from __future__ import annotations

import ast
import itertools
import types
from collections.abc import Mapping
from typing import Any

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
_counter = itertools.count()


def _is_size_value(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, (list, tuple)) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
    )


def _top_level_names(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id not in names:
                    names.append(target.id)
    return names


def size_constants(source: str) -> dict[str, Any]:
    """Top-level numeric constants (and lists/tuples of numbers) as the module computes them."""
    module = _execute(source)
    return {
        name: getattr(module, name)
        for name in _top_level_names(ast.parse(source))
        if not name.startswith("_") and _is_size_value(getattr(module, name, None))
    }


def shaped_source(source: str, params: Mapping[str, Any]) -> str:
    """The source with top-level assignments of the named constants replaced by the given values."""
    if not params:
        return source
    tree = ast.parse(source)
    known = set(size_constants(source))
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"shape sets unknown constant(s) {unknown}; the reference defines {sorted(known)}")
    body: list[ast.stmt] = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            body.append(node)
            continue
        targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if not targets or not set(targets) & set(params):
            body.append(node)
            continue
        # `height = width = 128` with only `height` overridden becomes two statements.
        for name in targets:
            value = ast.parse(repr(params[name]), mode="eval").body if name in params else node.value
            body.append(
                ast.copy_location(ast.Assign(targets=[ast.Name(name, ast.Store())], value=value), node)
            )
    tree.body = body
    return ast.unparse(ast.fix_missing_locations(tree))


def _execute(source: str) -> types.ModuleType:
    module = types.ModuleType(f"kernelevolve_reference_{next(_counter)}")
    exec(compile(source, "<reference>", "exec"), module.__dict__)  # noqa: S102 - the user's own reference
    return module


def load_reference_module(source: str, shape_params: Mapping[str, Any] | None = None) -> types.ModuleType:
    """Execute the (shaped) source as a fresh module that is not registered in sys.modules."""
    module = _execute(shaped_source(source, shape_params or {}))
    missing = [name for name in REQUIRED_NAMES if not hasattr(module, name)]
    if missing:
        raise ValueError(
            f"reference module lacks {missing} (KernelBench form: Model, get_inputs, get_init_inputs)"
        )
    return module
