"""Callables a class's ``__init__`` stores on self, so that calling them from the call path reaches their code.

``__init__`` is not on the call path, so a launcher made there and called from forward would otherwise be
an opaque value: its kernel launch would go uncounted (``no_backend_kernel`` for an honest kernel) and its
body unchecked (PyTorch compute in it unseen by the strict checks). Three forms are followed:

- ``self.f = lambda x, ...: ...``: the lambda, as a method of the class (its ``self`` is __init__'s);
- ``self.f = factory(...)``: a module-level function returning a nested function or a lambda (a closure);
  the factory is walked with the kernels its arguments name, and the closure with the call's kinds;
- ``self.f = functools.partial(g, ...)``: ``g`` a module-level function or a method of the class, called
  with the partial's positional arguments first.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kernelevolve.eval.static.module import Module, positional


@dataclass(frozen=True)
class StoredCallable:
    """What ``self.<attr>(...)`` runs: a synthesized method (lambda), a factory's closures, or a partial's
    target (a module function, or a method of the class when ``method`` is set)."""

    kind: str  # "lambda", "factory" or "partial"
    target: str  # the lambda's unit name, the factory's or the partial's function / method name
    node: ast.FunctionDef | None = None  # the synthesized method of a lambda
    init_args: tuple[ast.expr, ...] = ()  # the factory's or the partial's arguments in __init__
    closures: tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, ...] = ()  # what a factory returns
    method: bool = False


def stored_callables(mod: Module, cls: str) -> dict[str, StoredCallable]:
    """``self.<attr>`` callables that ``cls.__init__`` stores (see the module docstring)."""
    init = mod.class_methods(cls).get("__init__")
    if init is None:
        return {}
    self_name = (positional(init) or ["self"])[0]
    found: dict[str, StoredCallable] = {}
    for stmt in ast.walk(init):
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target, value = stmt.targets[0], stmt.value
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
            continue
        if target.value.id != self_name:
            continue
        attr = target.attr
        if isinstance(value, ast.Lambda):
            found[attr] = StoredCallable("lambda", f"{cls}.<lambda {attr}>", _as_method(value, self_name))
            continue
        made = _made_callable(mod, value)
        if made is not None:
            found[attr] = made
        elif isinstance(value, ast.Call) and mod.resolve(value.func) == "functools.partial" and value.args:
            first, rest = value.args[0], tuple(value.args[1:])
            if (
                isinstance(first, ast.Attribute)
                and isinstance(first.value, ast.Name)
                and first.value.id == self_name
                and first.attr in mod.class_methods(cls)
            ):
                found[attr] = StoredCallable("partial", first.attr, None, rest, method=True)
    return found


def module_callables(mod: Module) -> dict[str, StoredCallable]:
    """Module-level names bound to a factory's closure or a partial of a module function
    (``rotate = make_rotary(False)``), called by name from the call path."""
    found: dict[str, StoredCallable] = {}
    for stmt in mod.tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            made = _made_callable(mod, stmt.value)
            if made is not None:
                found[stmt.targets[0].id] = made
    return found


def _made_callable(mod: Module, value: ast.expr) -> StoredCallable | None:
    """A factory's call (a module function returning closures) or a partial of a module function."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in mod.functions:
        closures = returned_closures(mod.functions[value.func.id])
        return (
            StoredCallable("factory", value.func.id, None, tuple(value.args), closures) if closures else None
        )
    if isinstance(value, ast.Call) and mod.resolve(value.func) == "functools.partial" and value.args:
        first = value.args[0]
        if isinstance(first, ast.Name) and first.id in mod.functions:
            return StoredCallable("partial", first.id, None, tuple(value.args[1:]))
    return None


def returned_closures(
    factory: ast.FunctionDef | ast.AsyncFunctionDef,
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, ...]:
    """The nested functions (returned by name) and lambdas a function returns from its own body."""
    nested = {s.name: s for s in factory.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda] = []
    for node in _own_nodes(factory):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id in nested:
            found.append(nested[node.value.id])
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Lambda):
            found.append(node.value)
    return tuple(found)


def _own_nodes(func: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, not of the functions nested in it."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _as_method(lam: ast.Lambda, self_name: str) -> ast.FunctionDef:
    """A lambda stored on self, as a method: __init__'s ``self`` first, then its own parameters."""
    args = ast.arguments(
        posonlyargs=[],
        args=[ast.arg(arg=self_name), *lam.args.posonlyargs, *lam.args.args],
        vararg=lam.args.vararg,
        kwonlyargs=lam.args.kwonlyargs,
        kw_defaults=lam.args.kw_defaults,
        kwarg=lam.args.kwarg,
        defaults=lam.args.defaults,
    )
    node = ast.FunctionDef(
        name="<lambda>", args=args, body=[ast.Return(value=lam.body)], decorator_list=[], returns=None
    )
    return ast.fix_missing_locations(ast.copy_location(node, lam))
