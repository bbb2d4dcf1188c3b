"""The call path from ModelNew.forward, and the check that the work reaches the chosen backend.

The call path is ``ModelNew.forward`` plus every local function, method and class it calls or
passes along (never ``__init__`` of ModelNew, never kernel bodies). ``Checker`` grows that set to a
fixpoint: each unit is walked by ``flow.Flow`` with the kinds its call sites pass (see
``values``), and a unit is walked again whenever those kinds grow.

``no_backend_kernel``: triton needs a ``@triton.jit`` kernel launched (``kernel[grid](...)``) from
code reachable from ``ModelNew.forward``; cute needs a ``@cute.kernel``/``@cute.jit`` function used
from ``ModelNew``, where its ``__init__`` counts too (compiling there is the usual CuTe idiom).
"""

from __future__ import annotations

import ast

from kernelevolve.eval.static.callables import StoredCallable, module_callables, stored_callables
from kernelevolve.eval.static.flow import Flow
from kernelevolve.eval.static.kinds import EMPTY, INPUT, A, D, K, Kinds, Shape, T
from kernelevolve.eval.static.module import Module, callee_name, is_static, positional
from kernelevolve.eval.static.module_lists import module_lists
from kernelevolve.eval.static.module_rules import ModuleRules, syntactic_compute
from kernelevolve.eval.static.rules import MEMOIZERS
from kernelevolve.types import StaticIssue


class Checker:
    """Runs the whole-module rules, then the call-path analysis from ModelNew.forward; holds the issues."""

    def __init__(
        self, tree: ast.Module, backend: str, strict: bool, reference_state: frozenset[str] = frozenset()
    ) -> None:
        self.mod = Module(tree)
        self.backend = backend
        self.strict = strict
        self.reference_state = reference_state  # self attributes the reference's Model stores into per call
        self.issues: dict[tuple[str, int], StaticIssue] = {}
        self.rules = ModuleRules(self.mod, strict, self.issue)
        self.persistent_names = self.mod.module_names | set(self.mod.functions) | set(self.mod.classes)
        self.units: dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, str | None]] = {}
        self.params: dict[str, dict[str, Kinds]] = {}
        self.summaries: dict[str, Kinds] = {}
        self.shapes: dict[str, Shape | None] = {}  # per unit: the tuple every return gives (None: not one)
        self.changed = False
        self.launches = 0
        self.cute_used = False
        self.tensor_attrs: dict[str, set[str]] = {}
        self.local_attrs: dict[str, dict[str, str]] = {}
        self.torch_modules: dict[str, set[str]] = {}
        self.module_lists: dict[str, dict[str, tuple[str, ...]]] = {}  # per class: containers of own modules
        self.torch_using: set[str] = set()
        self.callables: dict[str, dict[str, StoredCallable]] = {}  # per class: self.<attr> callables
        self.module_callables = module_callables(self.mod)  # module-level `name = factory(...)`
        self.kernel_attrs: dict[str, set[str]] = {}  # per class: self.<attr> caches filled with launchers
        self.closure_params: dict[int, dict[str, Kinds]] = {}  # id() of a closure -> its parameters' kinds

    def issue(self, code: str, node: ast.AST, message: str) -> None:
        line = int(getattr(node, "lineno", 0))
        self.issues.setdefault((code, line), StaticIssue(code, message, line))

    def run(self) -> None:
        self.rules.run()
        model = self.mod.classes.get("ModelNew")
        methods = self.mod.class_methods("ModelNew")
        if model is None or "forward" not in methods:
            where: ast.AST = model if model is not None else self.mod.tree
            self.issue(
                "missing_model_new",
                where,
                "the candidate must define class ModelNew(nn.Module) with a forward method",
            )
            return
        self._collect_attrs()
        self._collect_torch_using()
        forward = methods["forward"]
        scalar = ("int", "float", "bool", "str")
        every_arg = [*forward.args.posonlyargs, *forward.args.args][1:] + forward.args.kwonlyargs
        every_arg += [a for a in (forward.args.vararg, forward.args.kwarg) if a is not None]  # *inputs
        self.params["ModelNew.forward"] = {
            a.arg: frozenset({D})
            if isinstance(a.annotation, ast.Name) and a.annotation.id in scalar
            else INPUT
            for a in every_arg
        }
        self.units["ModelNew.forward"] = (forward, "ModelNew")
        for _ in range(12):  # kinds only grow, so this reaches a fixpoint quickly
            self.changed = False
            for qual, (node, owner) in list(self.units.items()):
                flow = Flow(self, node, owner, self.params.get(qual, {}), qual == "ModelNew.forward")
                returned = flow.run()
                merged = self.summaries.get(qual, EMPTY) | returned
                if merged != self.summaries.get(qual, EMPTY):
                    self.summaries[qual] = merged
                    self.changed = True
                self._merge_shape(qual, flow.return_shapes)
            if not self.changed:
                break
        self._backend_check(model, methods)

    def _merge_shape(self, qual: str, shapes: list[Shape | None]) -> None:
        """Grow a unit's tuple shape: the element-wise union of its returns' tuples when they all have one
        length, None (not a tuple) otherwise. An empty shape (a local call not walked yet) adds nothing."""
        merged: Shape | None = self.shapes.get(qual, ())
        for shape in shapes:
            if merged is None or shape is None or (shape and merged and len(shape) != len(merged)):
                merged = None
            elif shape:
                merged = tuple(a | b for a, b in zip(merged, shape, strict=True)) if merged else shape
        if merged != self.shapes.get(qual, ()):
            self.shapes[qual] = merged
            self.changed = True

    # ---- call-path bookkeeping ----------------------------------------------------------------

    def _collect_attrs(self) -> None:
        """Per class: self attributes made in __init__ that hold tensors, local modules or nn layers."""
        for cls in self.mod.classes:
            tensors, local, layers = set(), {}, set()
            init = self.mod.class_methods(cls).get("__init__")
            held = self.module_lists[cls] = module_lists(self.mod, cls)
            for node in ast.walk(init) if init else ():
                if (
                    isinstance(node, ast.Call)
                    and callee_name(node.func) in ("register_buffer", "register_parameter")
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    tensors.add(node.args[0].value)
                if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                    continue
                for target in node.targets:
                    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
                        continue
                    callee = self.mod.resolve(node.value.func) or ""
                    made = self.mod.instance_made(node.value)  # Runner() or Runner.default()
                    if made is not None:
                        local[target.attr] = made
                    elif callee in ("torch.nn.Parameter", "torch.nn.Buffer") or (
                        callee.startswith("torch.") and not callee.startswith("torch.nn.")
                    ):
                        tensors.add(target.attr)
                    elif callee.startswith("torch.nn.") and target.attr not in held:
                        layers.add(target.attr)
            for stmt in self.mod.classes[cls].body:  # `launch = Launcher(kernel)` in the class body
                made = self.mod.instance_made(stmt.value) if isinstance(stmt, ast.Assign) else None
                if made is not None and isinstance(stmt, ast.Assign):
                    for target in stmt.targets:
                        if isinstance(target, ast.Name):
                            local.setdefault(target.id, made)
            self.tensor_attrs[cls], self.local_attrs[cls], self.torch_modules[cls] = tensors, local, layers
            self.callables[cls] = stored_callables(self.mod, cls)

    def _collect_torch_using(self) -> None:
        """Local functions/methods that compute in PyTorch, directly or through local calls."""
        bodies: dict[str, tuple[ast.AST, str | None]] = {n: (f, None) for n, f in self.mod.functions.items()}
        for cls in self.mod.classes:
            for name, node in self.mod.class_methods(cls).items():
                bodies[f"{cls}.{name}"] = (node, cls)
        calls: dict[str, set[str]] = {}
        for qual, (body, owner) in bodies.items():
            if id(body) in self.mod.device_defs:
                continue
            if any(True for _ in syntactic_compute(self.mod, body)):
                self.torch_using.add(qual)
            callees = calls.setdefault(qual, set())
            for n in ast.walk(body):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                    callees.add(n.func.id)
                elif (
                    isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute)
                    and isinstance(n.func.value, ast.Name)
                ):
                    base = n.func.value.id
                    callees.add(f"{owner if base in ('self', 'cls') else base}.{n.func.attr}")
        grew = True
        while grew:
            grew = False
            for qual, callees in calls.items():
                if qual not in self.torch_using and callees & self.torch_using:
                    self.torch_using.add(qual)
                    grew = True

    def reach(
        self,
        qual: str,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        owner: str | None,
        args: list[Kinds],
        kw: dict[str | None, Kinds],
        skip_first: bool,
        binds_ctx: bool = False,
    ) -> Kinds:
        """Add a unit to the call path with the kinds its call site passes; return its summary.
        `binds_ctx`: the first parameter is bound by the caller whatever the method's kind (autograd's
        `ctx` of a torch.autograd.Function's static forward and backward)."""
        if id(node) in self.mod.device_defs:
            self.cute_used = self.cute_used or node.name in self.mod.cute_funcs
            return EMPTY
        passed = frozenset().union(*args, *kw.values())
        if passed & {T, D, A} and any(
            self.mod.resolve(d.func if isinstance(d, ast.Call) else d) in MEMOIZERS
            for d in node.decorator_list
        ):
            self.issue("state_between_calls", node, f"{node.name} memoizes results of calls that get tensors")
        names = positional(node)[1 if binds_ctx or (skip_first and not is_static(node)) else 0 :]
        current = self.params.get(qual, {})
        merged = dict(current)
        for name, kinds in [*zip(names, args, strict=False), *kw.items()]:
            if name is not None:
                merged[name] = merged.get(name, EMPTY) | kinds
        if qual not in self.units or merged != current:
            self.units[qual] = (node, owner)
            self.params[qual] = merged
            self.changed = True
        return self.summaries.get(qual, EMPTY)

    def reach_stored(
        self, owner: str, stored: StoredCallable, args: list[Kinds], kw: dict[str | None, Kinds]
    ) -> tuple[Kinds, str]:
        """Calling a callable __init__ stored on self (`callables`): reach its code; its summary and unit."""
        bound = [frozenset({K}) if self.mod.holds_kernel(a) else EMPTY for a in stored.init_args]
        if stored.kind == "lambda" and stored.node is not None:
            return self.reach(stored.target, stored.node, owner, args, kw, skip_first=True), stored.target
        if stored.kind == "partial" and stored.method:
            return self.reach_method(owner, stored.target, [*bound, *args], kw), self.method_qual(
                owner, stored.target
            )
        function = self.mod.functions[stored.target]
        if stored.kind == "partial":
            return self.reach(stored.target, function, None, [*bound, *args], kw, False), stored.target
        for closure in stored.closures:  # a factory: its closures get the call's kinds
            names = [a.arg for a in (*closure.args.posonlyargs, *closure.args.args)]
            current = self.closure_params.setdefault(id(closure), {})
            for name, kinds in [*zip(names, args, strict=False), *kw.items()]:
                if name is not None and not kinds <= current.get(name, EMPTY):
                    current[name] = current.get(name, EMPTY) | kinds
                    self.changed = True
        return self.reach(stored.target, function, None, bound, {}, False), stored.target

    def _method(self, cls: str, name: str) -> ast.FunctionDef | None:
        node = self.mod.class_methods(cls).get(name)
        if node is None and name == "forward":  # calling an instance: nn.Module's forward, or __call__
            node = self.mod.class_methods(cls).get("__call__")
        return node

    def method_qual(self, cls: str, name: str) -> str:
        """The unit name of `cls.name` as reached (an instance call reaches ``__call__`` without a forward)."""
        node = self._method(cls, name)
        return f"{cls}.{node.name if node else name}"

    def reach_method(
        self,
        cls: str,
        name: str,
        args: list[Kinds],
        kw: dict[str | None, Kinds],
        skip_first: bool = True,
        binds_ctx: bool = False,
    ) -> Kinds:
        node = self._method(cls, name)
        return self.reach(f"{cls}.{node.name}", node, cls, args, kw, skip_first, binds_ctx) if node else EMPTY

    def reach_modules(
        self, classes: tuple[str, ...], args: list[Kinds], kw: dict[str | None, Kinds]
    ) -> Kinds:
        """A container of local modules called (`self.net(x)`) or one of its modules (`layer(x)` in a loop
        over it): each module's forward with the call's arguments and what the modules before it return."""
        passed, summary = list(args), EMPTY
        for cls in classes:
            summary = self.reach_method(cls, "forward", passed, kw)
            passed = [frozenset().union(*passed, summary)] if passed else passed
        return summary

    def reach_class(
        self, cls: str, args: list[Kinds], kw: dict[str | None, Kinds], instantiated: bool
    ) -> None:
        for name in self.mod.class_methods(cls):
            if name != "__init__" or instantiated:
                self.reach_method(
                    cls, name, args if name == "__init__" else [], kw if name == "__init__" else {}
                )

    def _backend_check(self, model: ast.ClassDef, methods: dict[str, ast.FunctionDef]) -> None:
        if self.backend == "triton":
            if self.launches:
                return
            kernels = ", ".join(sorted(self.mod.triton_kernels))
            message = (
                f"ModelNew.forward never launches its @triton.jit kernel(s) ({kernels}) as kernel[grid](...)"
                if kernels
                else "no @triton.jit kernel: the work must be done by a Triton kernel launched from ModelNew.forward"
            )
            self.issue("no_backend_kernel", model, message)
            return
        init = methods.get("__init__")
        for node in ast.walk(init) if init else ():
            if callee_name(node) in self.mod.cute_funcs:
                self.cute_used = True
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in self.mod.classes
            ):
                self.reach_class(node.func.id, [], {}, instantiated=False)
        if not self.cute_used:
            self.issue(
                "no_backend_kernel", model, "no @cute.kernel / @cute.jit function is used from ModelNew"
            )
