"""Keyword names given as data: ``f(**mapping)`` into a callee that may turn them into attributes.

``f(**{name: v})`` passes ``name`` as a keyword, and a library class that stores its keywords as attributes
(``argparse.Namespace``, ``SimpleNamespace``) then holds an attribute whose name the source never spells:
``"__array_" + "interface__"`` makes NumPy view an input's memory by its raw address, below anything the
runner can count. The attribute-name rules read spelled names only, so where the callee is not known to be
harmless, a ``**`` mapping must spell its keys: a dict display with literal string keys (``**{"BLOCK": 64}``)
or ``dict(BLOCK=64)``. Harmless callees take any mapping: a Triton launch (``kernel[grid](**meta)``),
``torch``/``triton`` functions (fixed keyword parameters, no attributes made), ``dict``, and the module's
own functions and the methods of its own classes (whatever they pass on meets this rule at their own
calls); ``functools.partial(f, **m)`` is judged by ``f``, which gets the keywords. A class the module
defines is harmless only if it defines ``__init__``: otherwise it inherits one, perhaps a library's that
stores keywords. Named tuples are harmless too (their generated ``__new__`` takes the fields and nothing
else, and a key that is no field raises): a class whose only base is ``typing.NamedTuple`` (which refuses a
``__new__`` or ``__init__`` of its own), or a module-level name bound once to ``collections.namedtuple`` /
``typing.NamedTuple`` called with literal field names.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from kernelevolve.eval.static.module import Module

IssueSink = Callable[[str, ast.AST, str], None]
_HARMLESS_ROOTS = ("torch", "triton")
KEYWORD_STORES = frozenset({"types.SimpleNamespace"})  # legal only when called with spelled keywords


def check_keyword_unpacking(
    mod: Module, node: ast.Call, own_classes: set[str], issue: IssueSink, parents: dict[int, ast.AST]
) -> None:
    """A ``**`` argument with keys the source does not spell, into a callee not known to be harmless."""
    unpacked = [k.value for k in node.keywords if k.arg is None]
    if not unpacked or all(_keys_spelled(value) for value in unpacked):
        return
    if decorator_forwarding(mod, node, parents):
        return
    # a partial hands its keywords to the function it wraps: that one must be harmless
    callee = node.func
    if mod.resolve(callee) == "functools.partial" and node.args and not isinstance(node.args[0], ast.Starred):
        callee = node.args[0]
    if _harmless_callee(mod, callee, own_classes):
        return
    issue(
        "dynamic_code",
        node,
        "** passes keyword names chosen at run time to a callee that can make attributes of them; spell "
        'the keywords (f(a=1), **{"a": 1}, **dict(a=1))',
    )


def check_keyword_store_as_value(
    mod: Module, node: ast.AST, parent: ast.AST | None, issue: IssueSink
) -> None:
    """``SimpleNamespace`` stores its keywords as attributes: called on the spot its ``**`` mapping meets
    the rule above; taken as a value (a base class, a list entry, a partial) the call it reaches is unseen."""
    if mod.resolve(node) in KEYWORD_STORES and not (isinstance(parent, ast.Call) and parent.func is node):
        issue("dynamic_code", node, "a class that stores keywords as attributes, taken as a value")


def check_functional_enum(mod: Module, node: ast.Call, issue: IssueSink) -> None:
    """``enum.Enum("E", {name: v})`` makes class attributes of a mapping's keys (a dunder key becomes a plain
    class attribute, ``E.__array_interface__``); an enum written as a class spells its names."""
    resolved = mod.resolve(node.func)
    if resolved and resolved.split(".")[0] == "enum" and (len(node.args) > 1 or node.keywords):
        issue("dynamic_code", node, "enum's functional API makes attributes of names given as data")


def decorator_forwarding(mod: Module, node: ast.Call, parents: dict[int, ast.AST]) -> bool:
    """``fn(*args, **kwargs)`` in a decorator's wrapper: ``kwargs`` the wrapper's own ``**`` parameter and
    ``fn`` a parameter of the module-level decorator around it, used nowhere but as ``@decorator`` on the
    module's own functions. ``fn`` is then always an own function, harmless like any other (what it passes
    on meets this rule at its own calls), so forwarding is as safe as calling it by name."""
    chain: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    at: ast.AST | None = parents.get(id(node))
    while at is not None:
        if isinstance(at, (ast.FunctionDef, ast.AsyncFunctionDef)):
            chain.append(at)
        at = parents.get(id(at))
    if len(chain) < 2 or not isinstance(node.func, ast.Name):
        return False
    wrapper, decorator = chain[0], chain[-1]
    if decorator not in mod.tree.body or decorator.name in _rebound(mod):
        return False
    forwarded = [k.value for k in node.keywords if k.arg is None]
    if wrapper.args.kwarg is None or any(
        not (isinstance(v, ast.Name) and v.id == wrapper.args.kwarg.arg) for v in forwarded
    ):
        return False
    params = [a.arg for a in (*decorator.args.posonlyargs, *decorator.args.args)]
    if params[:1] != [node.func.id] or _stored_in(decorator, node.func.id):
        return False
    uses = [n for n in ast.walk(mod.tree) if isinstance(n, ast.Name) and n.id == decorator.name]
    # innermost decorator only: then `fn` is the function as defined, not what another decorator made of it
    innermost = [
        f.decorator_list[-1]
        for f in ast.walk(mod.tree)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.decorator_list
    ]
    return all(any(use is d for d in innermost) for use in uses)


def _stored_in(decorator: ast.AST, name: str) -> bool:
    """`name` rebound in the decorator, or shadowed by a parameter of a function nested in it."""
    stores = [
        n
        for n in ast.walk(decorator)
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
    ]
    params = [n for n in ast.walk(decorator) if isinstance(n, ast.arg) and n.arg == name]
    return bool(stores) or len(params) > 1


def _keys_spelled(value: ast.expr) -> bool:
    if isinstance(value, ast.Dict):
        return all(
            (isinstance(key, ast.Constant) and isinstance(key.value, str))
            or (key is None and _keys_spelled(item))  # {**other} inside the display
            for key, item in zip(value.keys, value.values, strict=True)
        )
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "dict"
        and not value.args
        and all(k.arg is not None for k in value.keywords)
    )


def _harmless_callee(mod: Module, func: ast.expr, own_classes: set[str]) -> bool:
    if isinstance(func, ast.Subscript):
        # kernel[grid](..., **meta): a launch, its kernel often taken from a plan at run time. A library
        # class that stores keywords cannot get there unnamed: those are banned by name, and
        # SimpleNamespace (legal when called with spelled keywords) may not be taken as a value
        return True
    resolved = mod.resolve(func)
    if resolved is not None:
        return resolved.split(".")[0] in _HARMLESS_ROOTS
    if isinstance(func, ast.Name):
        if func.id == "dict":
            return "dict" not in _rebound(mod)
        if func.id in own_classes:
            return _defines_init(mod, func.id) or _named_tuple_class(mod, func.id)
        if func.id in _named_tuple_names(mod):
            return True
        return func.id in _own_function_names(mod)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return any(func.attr in mod.class_methods(cls) for cls in own_classes)
    return False


def _defines_init(mod: Module, cls: str) -> bool:
    """The class (or a module-level base the module defines) has its own ``__init__``, written or made by
    ``@dataclass`` from declared fields."""
    if "__init__" in mod.class_methods(cls):
        return True
    node = next((n for n in ast.walk(mod.tree) if isinstance(n, ast.ClassDef) and n.name == cls), None)
    if node is None:
        return False
    return any(isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in node.body) or any(
        mod.resolve(d.func if isinstance(d, ast.Call) else d) == "dataclasses.dataclass"
        for d in node.decorator_list
    )


_NAMED_TUPLE_FACTORIES = frozenset({"collections.namedtuple", "typing.NamedTuple"})


def _named_tuple_class(mod: Module, cls: str) -> bool:
    """``class P(NamedTuple)``: its only base typing.NamedTuple (a subclass of it may define ``__new__``)."""
    node = mod.classes.get(cls)
    return (
        node is not None
        and not node.keywords
        and [mod.resolve(b) for b in node.bases] == ["typing.NamedTuple"]
    )


def _named_tuple_names(mod: Module) -> set[str]:
    """Names bound once, at module level, to a named tuple made from literal field names:
    ``P = collections.namedtuple("P", ["a", "b"])`` or ``P = typing.NamedTuple("P", [("a", int)])``."""
    stores: dict[str, int] = {}
    for n in ast.walk(mod.tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
        else:  # any other binding of the name (a parameter, a def, a match capture, an except name)
            for other in _binds(n):
                stores[other] = stores.get(other, 0) + 2
    imported = {(a.asname or a.name).split(".")[0] for a in ast.walk(mod.tree) if isinstance(a, ast.alias)}
    found = set()
    for stmt in mod.tree.body:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call)
            and mod.resolve(stmt.value.func) in _NAMED_TUPLE_FACTORIES
            and not stmt.value.keywords
            and len(stmt.value.args) == 2
            and all(_literal(arg) for arg in stmt.value.args)
        ):
            continue
        name = stmt.targets[0].id
        if stores.get(name) == 1 and name not in imported:
            found.add(name)
    return found


def _binds(n: ast.AST) -> list[str]:
    if isinstance(n, ast.arg):
        return [n.arg]
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [n.name]
    if isinstance(n, (ast.Global, ast.Nonlocal)):
        return list(n.names)
    if isinstance(n, (ast.MatchAs, ast.MatchStar, ast.ExceptHandler)):
        return [n.name] if n.name else []
    if isinstance(n, ast.MatchMapping):
        return [n.rest] if n.rest else []
    return []


def _literal(node: ast.expr) -> bool:
    """Strings, and lists or tuples of them (or of (name, type) pairs), spelled in the source."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(
            _literal(e) or (isinstance(e, ast.Tuple) and len(e.elts) == 2 and _literal(e.elts[0]))
            for e in node.elts
        )
    return False


def _own_function_names(mod: Module) -> set[str]:
    """Functions the module defines (any depth) whose names nothing else binds."""
    defined = {n.name for n in ast.walk(mod.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return defined - _rebound(mod)


def _rebound(mod: Module) -> set[str]:
    """Names assigned or imported anywhere (`dict = argparse.Namespace` makes `dict` a library class)."""
    names = {n.id for n in ast.walk(mod.tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    return names | {
        (n.asname or n.name).split(".")[0] for n in ast.walk(mod.tree) if isinstance(n, ast.alias)
    }
