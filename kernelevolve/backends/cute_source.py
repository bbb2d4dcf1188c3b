"""The CuTe backend's static checks: what a candidate's syntax tree says about its CuTe structure (kernels,
JIT host functions, launches), decorators resolved through import aliases (`CuteBackend.static_issues`)."""

from __future__ import annotations

import ast

from kernelevolve.types import StaticIssue


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _launched(call: ast.Call) -> str:
    """The kernel name in `kernel(...).launch(...)` or `self.kernel(...).launch(...)`."""
    return _dotted(call.func).split(".")[-1]


class _CuteSource:
    """What a candidate's AST says about its CuTe structure (decorators resolved through import aliases)."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.cute_modules = {"cutlass.cute"}  # names bound to the cutlass.cute module
        self.direct: dict[str, str] = {}  # local name -> "jit" / "kernel" imported from cutlass.cute
        self.foreign: list[ast.stmt] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "cutlass.cute" and alias.asname:
                        self.cute_modules.add(alias.asname)
                    if alias.name.split(".")[0] == "triton":
                        self.foreign.append(node)
            elif isinstance(node, ast.ImportFrom) and node.module:
                if node.module.split(".")[0] == "triton":
                    self.foreign.append(node)
                for alias in node.names:
                    local = alias.asname or alias.name
                    if node.module == "cutlass" and alias.name == "cute":
                        self.cute_modules.add(local)
                    elif node.module == "cutlass.cute" and alias.name in ("jit", "kernel"):
                        self.direct[local] = alias.name
        self.functions: dict[str, tuple[str, ast.FunctionDef]] = {}  # name -> (kind, def), methods included
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                for decorator in node.decorator_list:
                    kind = self._decorator_kind(decorator)
                    if kind:
                        self.functions[node.name] = (kind, node)

    def _decorator_kind(self, decorator: ast.AST) -> str:
        name = _dotted(decorator)
        if name in self.direct:
            return self.direct[name]
        owner, _, last = name.rpartition(".")
        return last if last in ("jit", "kernel") and owner in self.cute_modules else ""

    def of_kind(self, kind: str) -> dict[str, ast.FunctionDef]:
        return {name: node for name, (k, node) in self.functions.items() if k == kind}

    def issues(self) -> list[StaticIssue]:
        found: list[StaticIssue] = []
        if self.foreign:
            found.append(
                StaticIssue("foreign_dsl", "a CuTe candidate must not import triton", self.foreign[0].lineno)
            )
        kernels, launchers = self.of_kind("kernel"), self.of_kind("jit")
        if not kernels:
            found.append(
                StaticIssue(
                    "no_cute_kernel",
                    "no @cute.kernel function is defined; the work must run in a CuTe kernel",
                )
            )
            return found
        if not launchers:
            found.append(
                StaticIssue(
                    "no_cute_jit",
                    "no @cute.jit launcher is defined; a @cute.jit function must call kernel(...).launch(grid=..., "
                    "block=...) and be compiled with cute.compile",
                )
            )
            return found
        launching = {
            name for name, node in launchers.items() if self._launches(node, set(kernels), launchers)
        }
        if not launching:
            names = ", ".join(sorted(kernels))
            found.append(
                StaticIssue(
                    "kernel_not_launched",
                    f"kernel(s) {names} are never launched: a @cute.jit launcher must call kernel(...).launch(...)",
                )
            )
            return found
        model = next(
            (n for n in self.tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None
        )
        if model is None:
            return found  # the generic checks report a missing ModelNew
        methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
        if "compile_kernels" not in methods:
            found.append(
                StaticIssue(
                    "no_compile_kernels",
                    "ModelNew must define compile_kernels(self, *inputs) returning {name: cute.compile(...)} for "
                    "the kernels forward launches (inputs may be meta tensors)",
                    model.lineno,
                )
            )
        used = self._names_reachable(model, methods)
        if not used & (launching | self._owners_of(launching)):
            found.append(
                StaticIssue(
                    "launcher_not_used",
                    f"ModelNew never uses the launcher(s) {', '.join(sorted(launching))} (cute.compile(launcher, ...) "
                    "on the call path of forward)",
                    model.lineno,
                )
            )
        return found

    def _launches(
        self, node: ast.FunctionDef, kernels: set[str], launchers: dict[str, ast.FunctionDef]
    ) -> bool:
        """node calls kernel(...).launch(...) itself or through another @cute.jit function it calls."""
        todo, seen = [node], set()
        while todo:
            function = todo.pop()
            if function.name in seen:
                continue
            seen.add(function.name)
            for sub in ast.walk(function):
                if not isinstance(sub, ast.Call):
                    continue
                target = sub.func
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr == "launch"
                    and isinstance(target.value, ast.Call)
                    and _launched(target.value) in kernels
                ):
                    return True
                callee = _dotted(target).split(".")[-1]
                if callee in launchers:
                    todo.append(launchers[callee])
        return False

    def _owners_of(self, names: set[str]) -> set[str]:
        """Classes that define one of `names` as a method (a launcher held by an object, called via the object)."""
        return {
            cls.name
            for cls in ast.walk(self.tree)
            if isinstance(cls, ast.ClassDef)
            and any(isinstance(n, ast.FunctionDef) and n.name in names for n in cls.body)
        }

    def _names_reachable(self, model: ast.ClassDef, methods: dict[str, ast.FunctionDef]) -> set[str]:
        """Names and attributes read on the call path of forward (through self-methods and module functions)."""
        functions = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        todo = [methods[m] for m in ("forward", "__call__", "__init__") if m in methods]
        seen: set[int] = set()
        used: set[str] = set()
        while todo:
            function = todo.pop()
            if id(function) in seen:
                continue
            seen.add(id(function))
            for node in ast.walk(function):
                if isinstance(node, ast.Name):
                    used.add(node.id)
                    if node.id in functions:
                        todo.append(functions[node.id])
                elif isinstance(node, ast.Attribute):
                    used.add(node.attr)
                    if isinstance(node.value, ast.Name) and node.value.id == "self" and node.attr in methods:
                        todo.append(methods[node.attr])
        return used
