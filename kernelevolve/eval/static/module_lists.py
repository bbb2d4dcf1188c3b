"""Containers of the candidate's own modules that a class's ``__init__`` stores on self.

``self.net = nn.Sequential(TritonLinear(...), nn.Identity(), TritonLinear(...))`` called as ``self.net(x)``,
or ``self.layers = nn.ModuleList([Block(...) for ...])`` run by ``for layer in self.layers: x = layer(x)``:
read as a torch.nn layer, the call computed in PyTorch (``torch_compute_op`` in strict mode) and the local
modules' launches were never reached (``no_backend_kernel``). A container is followed when every element
is an instance of a local class (or ``nn.Identity()``) and the class touches the attribute in no other
way than its one store in ``__init__``, calling it, and iterating it in a ``for``: anything that could put
a PyTorch layer in it later (``append``, ``add_module``, indexing, passing it on, ``getattr``/``setattr``
on self, ``_modules``) leaves it a torch.nn layer, as before.
"""

from __future__ import annotations

import ast

from kernelevolve.eval.static.module import Module, positional

CONTAINERS = ("torch.nn.Sequential", "torch.nn.ModuleList")
_DYNAMIC = ("getattr", "setattr", "delattr", "vars")
_DYNAMIC_ATTRS = ("_modules", "__dict__", "add_module", "register_module")


def module_lists(mod: Module, cls: str) -> dict[str, tuple[str, ...]]:
    """``self.<attr>``: the local classes of the modules in it, for the containers this class may call."""
    methods = mod.class_methods(cls)
    init = methods.get("__init__")
    if init is None or any(_dynamic(m) for m in methods.values()):
        return {}
    self_name = (positional(init) or ["self"])[0]
    found: dict[str, tuple[str, ...]] = {}
    for stmt in ast.walk(init):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target = stmt.targets[0]
        if isinstance(target, ast.Attribute) and _is_name(target.value, self_name):
            classes = _elements(mod, stmt.value)
            if classes is not None:
                found[target.attr] = classes
    return {attr: classes for attr, classes in found.items() if _only_called(mod, cls, attr)}


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _dynamic(node: ast.AST) -> bool:
    """A method reaches attributes by name or through nn.Module's registry."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _DYNAMIC:
            return True
        if isinstance(n, ast.Attribute) and n.attr in _DYNAMIC_ATTRS:
            return True
    return False


def _elements(mod: Module, value: ast.expr) -> tuple[str, ...] | None:
    """The local classes `nn.Sequential(...)` / `nn.ModuleList([...])` is built of, or None."""
    if not (isinstance(value, ast.Call) and mod.resolve(value.func) in CONTAINERS) or value.keywords:
        return None
    items: list[ast.expr] = []
    for arg in value.args:
        inner = arg.value if isinstance(arg, ast.Starred) else arg
        if isinstance(inner, (ast.List, ast.Tuple)):
            items += inner.elts
        elif isinstance(inner, (ast.ListComp, ast.GeneratorExp)):
            items.append(inner.elt)
        elif isinstance(arg, ast.Starred):
            return None
        else:
            items.append(inner)
    classes: list[str] = []
    for item in items:
        made = mod.instance_made(item)
        if made is not None:
            classes.append(made)
        elif not (
            isinstance(item, ast.Call)
            and mod.resolve(item.func) == "torch.nn.Identity"
            and not item.args
            and not item.keywords
        ):
            return None
    return tuple(dict.fromkeys(classes)) or None


def _only_called(mod: Module, cls: str, attr: str) -> bool:
    """Every use of `self.<attr>` in the class: its one store, a call of it, or the iterable of a `for`."""
    allowed: set[int] = set()
    stores = 0
    for method in mod.class_methods(cls).values():
        for n in ast.walk(method):
            if isinstance(n, ast.Assign) and any(_is_attr(t, attr) for t in n.targets):
                stores += 1
                allowed.update(id(t) for t in n.targets)
            elif isinstance(n, ast.Call) and _is_attr(n.func, attr):
                allowed.add(id(n.func))
            elif isinstance(n, (ast.For, ast.AsyncFor)) and _is_attr(n.iter, attr):
                allowed.add(id(n.iter))
    uses = [
        n
        for method in mod.class_methods(cls).values()
        for n in ast.walk(method)
        if isinstance(n, ast.Attribute) and n.attr == attr
    ]
    return stores == 1 and all(id(n) in allowed for n in uses)


def _is_attr(node: ast.AST, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name)
