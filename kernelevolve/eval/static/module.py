"""Import-alias resolution and the top-level definitions of one candidate module.

Every rule works on the syntax tree (never on the text) with import aliases resolved, so
``import torch.nn.functional as F; F.softmax``, ``from torch import compile as c``, module-level
``Event = torch.cuda.Event`` and ``getattr(torch, "compile")`` read the same as the spelled-out
names. ``Module.resolve`` is that resolution; the rest records what the call-path analysis needs:
local functions and classes, module-level names and containers, and the kernels (whose bodies are
device code, never PyTorch host code).
"""

from __future__ import annotations

import ast
from collections import Counter

from kernelevolve.eval.static.rules import CUTE_DECORATORS, TRITON_JIT


class Module:
    """Import aliases, top-level definitions and kernels of one candidate module."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{base}.{a.name}"
        for stmt in tree.body:  # module-level aliases of library names: `Event = torch.cuda.Event`
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.Name, ast.Attribute)):
                target = self.resolve(stmt.value)
                for t in stmt.targets:
                    if target and isinstance(t, ast.Name):
                        self.aliases[t.id] = target
        self.functions = {
            n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.containers: set[str] = set()
        self.triton_kernels: set[str] = set()
        self.cute_funcs: set[str] = set()
        self.device_defs: set[int] = set()  # id() of kernel bodies: device code, not PyTorch host code
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(self._mentions(d, TRITON_JIT) for d in node.decorator_list):
                    self.triton_kernels.add(node.name)
                    self.device_defs.add(id(node))
                if any(self._mentions(d, CUTE_DECORATORS) for d in node.decorator_list):
                    self.cute_funcs.add(node.name)
                    self.device_defs.add(id(node))
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign):
                names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
                if self._mentions(stmt.value, TRITON_JIT):
                    self.triton_kernels.update(names)
                elif isinstance(stmt.value, (ast.Dict, ast.List, ast.Set)) or (
                    isinstance(stmt.value, ast.Call)
                    and isinstance(stmt.value.func, (ast.Name, ast.Attribute))
                    and (getattr(stmt.value.func, "id", "") or getattr(stmt.value.func, "attr", ""))
                    in ("dict", "list", "set", "defaultdict", "OrderedDict", "deque")
                ):
                    self.containers.update(names)
        # Module-level names that hold kernels (`KERNELS = {"relu": relu_kernel}`) or instances of local
        # classes (`RUNNER = Runner()`): what the call path reaches through them.
        self.kernel_holders: set[str] = set()
        self.instances: dict[str, str] = {}
        self._kernel_attrs: dict[str, frozenset[str]] = {}
        for stmt in tree.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                if self.holds_kernel(stmt.value):
                    self.kernel_holders.update(n for n in names if n not in self.triton_kernels)
                made = self.instance_made(stmt.value)
                if made is not None:
                    self.instances.update(dict.fromkeys(names, made))
        # Module-level names whose value names local functions (a dispatch table of launchers): reading one
        # on the call path puts those functions on it.
        self.function_holders: dict[str, frozenset[str]] = {}
        for stmt in tree.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                held = frozenset(
                    n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name) and n.id in self.functions
                )
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    if held and isinstance(t, ast.Name) and t.id not in self.functions:
                        self.function_holders[t.id] = self.function_holders.get(t.id, frozenset()) | held
        # Module-level names bound once, to a local autograd.Function's `apply` (the Triton tutorial's
        # `layer_norm = LayerNorm.apply`): a call of one is a call of `LayerNorm.apply`.
        stores = Counter(
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        )
        declared = {n for d in ast.walk(tree) if isinstance(d, (ast.Global, ast.Nonlocal)) for n in d.names}
        self.applies: dict[str, str] = {
            t.id: stmt.value.value.id
            for stmt in tree.body
            if isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Attribute)
            and stmt.value.attr == "apply"
            and isinstance(stmt.value.value, ast.Name)
            and stmt.value.value.id in self.classes
            for t in stmt.targets
            if isinstance(t, ast.Name) and stores[t.id] == 1 and t.id not in declared | set(self.classes)
        }
        # Names bound at module level: a store into one from the call path outlives the call.
        self.module_names = {
            t.id
            for s in tree.body
            if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            for t in ast.walk(s)
            if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
        }

    def instance_made(self, value: ast.AST) -> str | None:
        """The local class an expression makes an instance of: `Runner()`, or an alternate constructor,
        `Runner.default()`, a classmethod whose every return calls `cls(...)` or `Runner(...)`."""
        if not isinstance(value, ast.Call):
            return None
        func = value.func
        if isinstance(func, ast.Name) and func.id in self.classes:
            return func.id
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return None
        cls = func.value.id
        method = next(
            (
                n
                for n in getattr(self.classes.get(cls), "body", [])
                if isinstance(n, ast.FunctionDef) and n.name == func.attr
            ),
            None,
        )
        if method is None or not any(
            isinstance(d, ast.Name) and d.id == "classmethod" for d in method.decorator_list
        ):
            return None
        first = positional(method)[:1]
        if any(
            isinstance(n, ast.Name) and n.id in (*first, cls) and not isinstance(n.ctx, ast.Load)
            for n in ast.walk(method)
        ):
            return None  # `cls` rebound in the method: not the class any more
        returns = [n.value for n in ast.walk(method) if isinstance(n, ast.Return)]
        makes = [
            r
            for r in returns
            if isinstance(r, ast.Call) and isinstance(r.func, ast.Name) and r.func.id in (*first, cls)
        ]
        return cls if returns and len(makes) == len(returns) else None

    def resolve(self, node: ast.AST) -> str | None:
        """Dotted name of an import-rooted Name/Attribute chain (getattr with a constant counts)."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            base = self.resolve(node.args[0])
            return f"{base}.{node.args[1].value}" if base else None
        return None

    def holds_kernel(self, node: ast.AST) -> bool:
        """Whether an expression names a Triton kernel (itself, or inside a container or call)."""
        return any(
            isinstance(n, ast.Name) and (n.id in self.triton_kernels or n.id in self.kernel_holders)
            for n in ast.walk(node)
        )

    def class_kernel_attrs(self, cls: str, seen: frozenset[str] = frozenset()) -> frozenset[str]:
        """Attributes of a local class (class body, or ``self.<attr> = ...`` in ``__init__``) holding kernels."""
        if not seen and cls in self._kernel_attrs:
            return self._kernel_attrs[cls]
        node = self.classes.get(cls)
        if node is None or cls in seen:
            return frozenset()
        attrs: set[str] = set()
        for base in node.bases:
            if isinstance(base, ast.Name):
                attrs |= self.class_kernel_attrs(base.id, seen | {cls})
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        stmts = [*node.body, *(ast.walk(init) if init else ())]
        passed = self._kernel_params(cls, init) if init else frozenset()
        for stmt in stmts:
            if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
                continue
            if not (self.holds_kernel(stmt.value) or self._mentions_name(stmt.value, passed)):
                continue
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(target, ast.Name) and stmt in node.body:
                    attrs.add(target.id)
                elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    attrs.add(target.attr)
        if not seen:
            self._kernel_attrs[cls] = frozenset(attrs)
        return frozenset(attrs)

    def _kernel_params(self, cls: str, init: ast.FunctionDef) -> frozenset[str]:
        """Parameters of `cls.__init__` that a `cls(...)` call in the module passes a kernel
        (`RowLauncher(quant_kernel)` storing `self.kernel = kernel`)."""
        names = positional(init)[1:]
        found: set[str] = set()
        for call in ast.walk(self.tree):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == cls):
                continue
            found |= {n for n, a in zip(names, call.args, strict=False) if self.holds_kernel(a)}
            found |= {k.arg for k in call.keywords if k.arg is not None and self.holds_kernel(k.value)}
        return frozenset(found)

    @staticmethod
    def _mentions_name(node: ast.AST, names: frozenset[str]) -> bool:
        return bool(names) and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))

    def _mentions(self, node: ast.AST, names: frozenset[str]) -> bool:
        return any(
            self.resolve(n) in names for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))
        )

    def class_methods(self, cls: str, seen: frozenset[str] = frozenset()) -> dict[str, ast.FunctionDef]:
        """Methods of a module-level class, including those inherited from module-level bases."""
        node = self.classes.get(cls)
        if node is None or cls in seen:
            return {}
        methods: dict[str, ast.FunctionDef] = {}
        for base in reversed(node.bases):
            if isinstance(base, ast.Name):
                methods.update(self.class_methods(base.id, seen | {cls}))
        methods.update({n.name: n for n in node.body if isinstance(n, ast.FunctionDef)})  # type: ignore[misc]
        return methods


def is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def positional(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in (*node.args.posonlyargs, *node.args.args)]


def callee_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def canonical(dotted: str) -> str:
    """A dotted name with modules reached through another module's attributes named as themselves:
    `os.sys.modules` is `sys.modules`, `torch.os.fork` is `os.fork`, so a rule written for a module holds
    however it is reached. Only a root module already loaded here is looked at; the walk goes down every
    attribute that is a module, so a submodule its package loads lazily on first access
    (`numpy.ctypeslib.ctypes` is `ctypes`) resolves on the first check as on any later one."""
    import sys
    from types import ModuleType

    parts = dotted.split(".")
    module = sys.modules.get(parts[0])
    if module is None:
        return dotted
    name, used = parts[0], 1
    for index in range(1, len(parts)):
        try:
            target = getattr(module, parts[index], None)
        except Exception:  # noqa: BLE001 - a module's __getattr__ may fail; the name stays as spelled
            break
        if not isinstance(target, ModuleType) or not isinstance(target.__name__, str):
            break
        module, name, used = target, target.__name__, index + 1
    return ".".join([name, *parts[used:]])


def class_origins(dotted: str) -> list[str]:
    """Where the class a dotted name reaches is defined, and its bases: `torch.autograd.graph.
    TorchDispatchMode` is `torch.utils._python_dispatch.TorchDispatchMode`, re-exported. Empty where the
    name is not a class; built-in bases (`int` of an IntEnum) are left out. PyTorch is imported for it (the
    judge has it loaded anyway), so a name's verdict does not depend on what this process imported."""
    import importlib
    import sys

    parts = dotted.split(".")
    if parts[0] == "torch":
        importlib.import_module("torch")
    target = sys.modules.get(parts[0])
    for part in parts[1:]:
        try:
            target = getattr(target, part, None)
        except Exception:  # noqa: BLE001 - a module's __getattr__ may fail: nothing to resolve
            return []
    if target is None or not isinstance(target, type):
        return []
    return [f"{c.__module__}.{c.__qualname__}" for c in target.__mro__ if c.__module__ != "builtins"]
