"""Whole-module rules: banned names anywhere in the candidate, PyTorch compute at module level.

These read every node of the module, whatever ModelNew.forward reaches. ``if __name__ ==
"__main__":`` self-tests are already gone (see ``checks``). Each maximal Name/Attribute
chain and each import is resolved and matched against ``rules.NAME_RULES`` and friends;
attributes read by name outside attribute syntax (match class patterns, ``__dict__``) are in ``name_reads``;
``torch_compute_op`` at module or class level (strict only) is found syntactically, since nothing
there is on a call path to track.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from kernelevolve.eval.static.annotations import check_string_annotations
from kernelevolve.eval.static.format_fields import FORMAT_METHODS, check_format_read
from kernelevolve.eval.static.keyword_names import (
    check_functional_enum,
    check_keyword_store_as_value,
    check_keyword_unpacking,
)
from kernelevolve.eval.static.module import Module, canonical, class_origins
from kernelevolve.eval.static.name_reads import MATCH_ARGS_STORE, check_match_class, check_namespace_read
from kernelevolve.eval.static.rules import (
    ATTRIBUTE_BUILTINS,
    BUILTIN_RULES,
    CANDIDATE_MODULES,
    COMPUTE_METHODS,
    CUDA_PYTHON_OK,
    FILE_ATTRS,
    FINALIZERS,
    FRAME_ATTRS,
    GLOBAL_STATE_CALLS,
    GRAPH_NAMES,
    META_ATTRS,
    MUTATORS,
    NAME_RULES,
    OS_OK,
    OVERRIDE_HOOKS,
    RAW_MEMORY_NAMES,
    STDLIB_ROOTS,
    SYS_OK,
    TENSOR_METHODS_OK,
    TEXT_CODE_ATTRS,
    TORCH_OK,
    TRITON_DOORS,
    device_function_library_name,
    matches,
)
from kernelevolve.eval.static.shadowing import check_rebound_imports

IssueSink = Callable[[str, ast.AST, str], None]
MODULES_WHY = (
    "a candidate may import only the kernel languages, torch, numpy, einops and pure standard-library helpers "
    "(typing, dataclasses, collections, functools, itertools, math, ...); other modules reach files, "
    "processes, code given as text or raw memory"
)
ANSWERS_ANY_NAME = frozenset({"__getattr__", "__getattribute__"})
# Modules of which a kernel may use only the members listed: (allowed, issue code, why)
MEMBER_ALLOW_LISTS = {
    "sys": (SYS_OK, "introspection", "of sys a kernel may read only constants and stdout/stderr"),
    "os": (
        OS_OK,
        "reference_access",
        "of os a kernel may use only the environment, paths and constants (not files, processes or file "
        "descriptors, the runner's channel to the judge among them)",
    ),
}


class ModuleRules:
    """The rules that look at the whole module; issues go to `issue` (code, node, message)."""

    def __init__(self, mod: Module, strict: bool, issue: IssueSink) -> None:
        self.mod, self.strict, self.issue = mod, strict, issue
        self.parents = {id(c): n for n in ast.walk(mod.tree) for c in ast.iter_child_nodes(n)}
        self.own_classes = _own_classes(mod.tree)

    def run(self) -> None:
        self._name_rules()
        check_string_annotations(self.mod.tree, self.issue)
        check_rebound_imports(self.mod, self.issue)
        if self.strict:
            self._module_level_compute()

    def _rule(self, node: ast.AST, name: str) -> None:
        if device_function_library_name(name):
            return  # Triton device functions (Inductor's helpers): kernel code, not the compiler
        real = canonical(name)
        if real != name:  # a module reached through another's attribute (os.sys.modules): its own rules too
            self._rule(node, real)
        for prefixes, code, why in NAME_RULES:
            if matches(name, prefixes):
                self.issue(code, node, f"{name}: {why}")
        for origin in class_origins(name):  # a banned class re-exported, or a base of the class named
            for prefixes, code, why in NAME_RULES:
                if origin != name and matches(origin, prefixes):
                    self.issue(code, node, f"{name} is (or derives from) {origin}: {why}")
        root, _, member = name.partition(".")
        if root in STDLIB_ROOTS and any(p[:1] == "_" != p[1:2] for p in member.split(".")):
            self.issue("introspection", node, f"{name}: private internals of the standard library")
        if member and root in MEMBER_ALLOW_LISTS:
            allowed, code, why = MEMBER_ALLOW_LISTS[root]
            if member.split(".")[0] not in allowed:
                self.issue(code, node, f"{name}: {why}")
        if name.startswith("torch._") and not matches(name, NAME_RULES[0][0]):
            self.issue("introspection", node, f"{name}: private PyTorch internals")
        if name.split(".")[0] not in CANDIDATE_MODULES:
            self.issue("module_not_allowed", node, f"{name}: {MODULES_WHY}")
        if matches(name, TRITON_DOORS) or name.startswith("triton._"):
            self.issue("dynamic_code", node, f"{name}: builds, loads or hooks code beside Triton's kernels")
        if name.split(".")[0] == "cuda" and name not in CUDA_PYTHON_OK:
            self.issue("dynamic_code", node, f"{name}: of cuda-python a kernel may use only the stream type")
        if name.startswith("numpy.") and any(p[:1] == "_" != p[1:2] for p in name.split(".")[1:]):
            # NumPy's private modules hold the public names' implementations (`numpy.lib._stride_tricks_impl`)
            self.issue("introspection", node, f"{name}: private NumPy internals")
        if matches(name, GLOBAL_STATE_CALLS):
            self.issue("patching", node, f"{name} changes process-wide state the harness relies on")
        if self.strict and matches(name, GRAPH_NAMES):
            self.issue("cuda_graph", node, f"{name}: CUDA graphs are not allowed in strict mode")

    def _precision_flag_off(self, node: ast.Attribute, name: str | None) -> bool:
        """`torch.backends.cuda.matmul.allow_tf32 = False` as a statement of the module itself (at import,
        so every checked and timed call runs under it): a switch that only takes precision shortcuts away.
        Turning one on, or any switch set inside a function, stays `patching`."""
        statement = self.parents.get(id(node))
        return (
            name in PRECISION_FLAGS
            and isinstance(statement, ast.Assign)
            and statement in self.mod.tree.body
            and len(statement.targets) == 1
            and isinstance(statement.value, ast.Constant)
            and statement.value.value is False
        )

    def _taken_as_value(self, node: ast.AST, name: str) -> None:
        """Strict: a PyTorch compute function named but not called on the spot (`OPS = {"relu": torch.relu}`,
        `f = torch.Tensor.clamp`): the call happens later through a name the call-path checks cannot follow."""
        parent = self.parents.get(id(node))
        if not self.strict or (isinstance(parent, ast.Call) and parent.func is node) or name in TORCH_OK:
            return
        head, _, last = name.rpartition(".")
        library = head == "torch" or head.startswith(
            ("torch.nn.functional", "torch.special", "torch.linalg", "torch.fft")
        )
        function = library and last.rstrip("_") in COMPUTE_METHODS
        method = head == "torch.Tensor" and last not in TENSOR_METHODS_OK | META_ATTRS
        if function or method or name.startswith("torch.ops."):
            self.issue(
                "torch_compute_op", node, f"{name} taken as a value computes in PyTorch when it is called"
            )

    def _name_rules(self) -> None:
        mod = self.mod
        defined = set(mod.functions) | set(mod.classes) | mod.module_names
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self._rule(node, a.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    self.issue(
                        "reference_access", node, "relative import: the candidate must be self-contained"
                    )
                for a in node.names:
                    self._rule(node, f"{node.module}.{a.name}" if node.module else a.name)
            elif isinstance(node, ast.ClassDef):
                if any(
                    self.mod.resolve(b) in ("torch.Tensor", "torch._C.TensorBase") for b in node.bases
                ) or any(
                    isinstance(n, ast.FunctionDef) and n.name in ("__torch_function__", "__torch_dispatch__")
                    for n in node.body
                ):
                    self.issue(
                        "lazy_result",
                        node,
                        f"class {node.name} is a tensor subclass / torch function override",
                    )
            elif isinstance(node, (ast.Name, ast.Attribute)):
                self._reference(node, defined)
            elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
                if mod.resolve(node.value):
                    self.issue("patching", node, f"stores into {mod.resolve(node.value)}")
            elif isinstance(node, ast.Call):
                self._call_rules(node)
            elif isinstance(node, ast.MatchClass):
                check_match_class(self.mod, node, self.issue)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in FRAME_ATTRS:
                self.issue(
                    "introspection", node, f"{node.value!r} names an attribute that walks the interpreter"
                )
            spelled = _identifiers(node)
            for name in spelled & RAW_MEMORY_NAMES:
                self.issue("introspection", node, f"{name} hands NumPy or a GPU library a raw memory address")
            for name in spelled & TEXT_CODE_ATTRS:
                self.issue("dynamic_code", node, f"{name}: annotations are text libraries evaluate as code")
            for name in spelled & OVERRIDE_HOOKS:
                self.issue("lazy_result", node, f"{name}: a tensor subclass's or mode's hook on every op")
            for name in spelled & FINALIZERS:
                self.issue("lazy_result", node, f"{name}: a finalizer runs wherever its object is freed")
            for name in spelled & ANSWERS_ANY_NAME:
                # defined, assigned or set on a class, it answers lookups of names the source never spells:
                # NumPy's `__array_interface__` (a raw address) as much as any attribute the rules ban
                self.issue(
                    "dynamic_code", node, f"{name} answers attribute lookups by names chosen at run time"
                )

    def _reference(self, node: ast.Name | ast.Attribute, defined: set[str]) -> None:
        parent = self.parents.get(id(node))
        maximal = not (isinstance(parent, ast.Attribute) and parent.value is node)
        name = self.mod.resolve(node)
        if name and maximal:
            self._rule(node, name)
            if isinstance(node.ctx, ast.Load):
                self._taken_as_value(node, name)
                check_keyword_store_as_value(self.mod, node, parent, self.issue)
        if isinstance(node, ast.Attribute):
            if (
                not isinstance(node.ctx, ast.Load)
                and self.mod.resolve(node.value)
                and not self._precision_flag_off(node, name)
            ):
                self.issue("patching", node, f"assigns to {name}: candidates may not patch modules")
            if node.attr == "__dict__" and self.mod.resolve(node.value):
                self.issue("patching", node, f"{name} exposes a module's namespace")
            elif node.attr == "__dict__":
                check_namespace_read(node, self.parents, self.issue)
            if node.attr == "__match_args__" and not isinstance(node.ctx, ast.Load):
                self.issue("dynamic_code", node, MATCH_ARGS_STORE)
            if node.attr in FORMAT_METHODS and isinstance(node.ctx, ast.Load):
                check_format_read(node, self.issue)
            if node.attr in FRAME_ATTRS:
                self.issue("introspection", node, f".{node.attr} walks frames, code objects or classes")
            if node.attr in FILE_ATTRS:
                self.issue("reference_access", node, f".{node.attr} maps, reads or writes files by path")
            if node.attr in ("Model", "get_inputs", "get_init_inputs"):
                self.issue("reference_access", node, f".{node.attr} reaches for the reference")
            if node.attr in ("as_subclass", "_make_subclass") or (
                node.attr == "__class__" and not isinstance(node.ctx, ast.Load)
            ):
                self.issue("lazy_result", node, f".{node.attr} makes a tensor subclass")
        elif (
            name is None
            and isinstance(node.ctx, ast.Load)
            and node.id in BUILTIN_RULES
            and (node.id in ("Model", "get_inputs", "get_init_inputs") or node.id not in defined)
        ):
            code, why = BUILTIN_RULES[node.id]
            self.issue(code, node, f"{node.id}: {why}")
        elif (
            node.id == "super"
            and node.id not in defined
            and not (isinstance(parent, ast.Call) and parent.func is node)
        ):
            self.issue("introspection", node, "super taken as a value: its explicit class is not checked")
        elif (
            node.id in ATTRIBUTE_BUILTINS
            and node.id not in defined
            and not (isinstance(parent, ast.Call) and parent.func is node)
        ):
            self.issue(
                "dynamic_code", node, f"{node.id} taken as a value: attributes reached by computed names"
            )

    def _call_rules(self, node: ast.Call) -> None:
        func, mod = node.func, self.mod
        if isinstance(func, ast.Name) and func.id == "super" and node.args:
            self._explicit_super(node)
        check_keyword_unpacking(
            mod, node, self.own_classes, self.issue, self.parents
        )  # SimpleNamespace(**...) and kin
        check_functional_enum(mod, node, self.issue)
        if isinstance(func, ast.Name) and func.id == "type" and len(node.args) == 3:
            self.issue(
                "dynamic_code",
                node,
                "type() with three arguments makes a class from a namespace built at run time",
            )
        resolved = mod.resolve(node)  # getattr(module, "name") reads like module.name
        if resolved and isinstance(func, ast.Name):
            self._rule(node, resolved)
            self._taken_as_value(node, resolved)
        if (
            isinstance(func, ast.Name)
            and func.id in ("getattr", "setattr", "delattr", "hasattr")
            and node.args
        ):
            target = mod.resolve(node.args[0])
            const = node.args[1] if len(node.args) > 1 else None
            text = const.value if isinstance(const, ast.Constant) and isinstance(const.value, str) else None
            if func.id in ("setattr", "delattr") and target:
                self.issue("patching", node, f"{func.id} on module {target}")
            if text in ("Model", "get_inputs", "get_init_inputs"):
                self.issue("reference_access", node, f"{func.id}(..., {text!r}) reaches for the reference")
            if func.id == "getattr" and text is None and target and target.split(".")[0] == "torch":
                self.issue("dynamic_code", node, f"getattr on {target} with a computed name")
            elif func.id in ATTRIBUTE_BUILTINS and text is None and len(node.args) > 1:
                # a name built at run time can be any attribute ("__sub" + "classes__"): the rules below,
                # which read attribute names, would never see it
                self.issue(
                    "dynamic_code",
                    node,
                    f"{func.id} with a name computed at run time; name the attribute, or keep such values in a "
                    "dict (parameters: register_parameter, self._parameters)",
                )
            if text in FRAME_ATTRS:
                self.issue("introspection", node, f"{func.id}(..., {text!r}) walks the interpreter")
            if text == "__match_args__" and func.id != "getattr":
                self.issue("dynamic_code", node, MATCH_ARGS_STORE)
        elif isinstance(func, ast.Attribute) and func.attr in MUTATORS and mod.resolve(func.value):
            self.issue("patching", node, f"{mod.resolve(func.value)}.{func.attr}() mutates a module's state")

    def _explicit_super(self, node: ast.Call) -> None:
        """`super(C, obj)` starts the attribute lookup after C in obj's classes: with C a library class
        (`super(torch.Tensor, t).tolist()`) it reaches the C base class's methods, which the runner cannot
        wrap (`host_reads`). So C must be a class this module defines (`super(ModelNew, self)`)."""
        first = node.args[0]
        if not (isinstance(first, ast.Name) and first.id in self.own_classes):
            self.issue(
                "introspection",
                node,
                "super() with an explicit class other than one this module defines: reaches the methods of a "
                "library's base classes; write super() or super(YourClass, self)",
            )

    def _module_level_compute(self) -> None:
        stmts: list[ast.stmt] = []
        for stmt in self.mod.tree.body:
            stmts.extend(stmt.body if isinstance(stmt, ast.ClassDef) else [stmt])
        for stmt in stmts:
            if not isinstance(
                stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
            ):
                for node, what in syntactic_compute(self.mod, stmt):
                    self.issue("torch_compute_op", node, f"{what} computes in PyTorch at module/class level")


def syntactic_compute(mod: Module, root: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """PyTorch compute under `root`, read off the syntax alone (no tracking of what names hold)."""
    for node in ast.walk(root):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            yield node, "the @ operator"
        elif isinstance(node, ast.Call):
            name = mod.resolve(node.func)
            if name and name.startswith("torch.") and name not in TORCH_OK:
                yield node, f"{name}()"
            elif name is None and isinstance(node.func, ast.Attribute):
                if node.func.attr.rstrip("_") in COMPUTE_METHODS:
                    yield node, f".{node.func.attr}()"
            elif isinstance(node.func, ast.Name) and node.func.id == "Model":
                yield node, "the reference Model"


def _identifiers(node: ast.AST) -> set[str]:
    """The names a node spells: an attribute, a variable, a definition, a keyword argument, a string."""
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.keyword) and node.arg:
        return {node.arg}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    return set()


# PyTorch's reduced-precision switches for its own matmuls and convolutions: set to False (full fp32 or
# fp16 accumulation) they can only make the candidate's library calls slower and closer to the reference
PRECISION_FLAGS = frozenset(
    {
        "torch.backends.cuda.matmul.allow_tf32",
        "torch.backends.cudnn.allow_tf32",
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
    }
)


def _own_classes(tree: ast.Module) -> set[str]:
    """Names of classes the module defines and never binds to anything else (`Foo = torch.Tensor` after
    `class Foo` makes `Foo` a library class again)."""
    classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    rebound: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            rebound.add(n.id)
        elif isinstance(n, ast.arg):
            rebound.add(n.arg)
        elif isinstance(n, ast.alias):
            rebound.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Global, ast.Nonlocal)):
            rebound.update([n.name] if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) else n.names)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            rebound.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            rebound.add(n.rest)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            rebound.add(n.name)
    return classes - rebound
