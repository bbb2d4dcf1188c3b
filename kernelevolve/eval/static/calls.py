"""What a call in a call-path function returns and what it does: the call half of `values.Values`
(PyTorch calls, tensor methods, local functions and classes, launches, host round trips)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from kernelevolve.eval.static.counters import is_counter_step
from kernelevolve.eval.static.kinds import (
    EMPTY,
    INPUT,
    LOCAL,
    METHOD,
    UNKNOWN_SHAPE,
    A,
    D,
    F,
    H,
    K,
    Kinds,
    S,
    Shape,
    T,
)
from kernelevolve.eval.static.module import callee_name
from kernelevolve.eval.static.rules import (
    ALIAS_METHODS,
    COMPUTE_BUILTINS,
    COMPUTE_METHODS,
    CONTAINER_READS,
    HOST_BUILTINS,
    HOST_CONVERSIONS,
    HOST_FORMATTERS,
    HOST_READS,
    META_METHODS,
    MUTATORS,
    NEW_METHODS,
    STORAGE_METHODS,
    STORAGE_QUERIES,
    TENSOR_LIBRARIES_OK,
    TENSOR_METHODS_OK,
    TORCH_FRESH,
    TORCH_OK,
    TORCH_VIEWS,
    TORCH_VIEWS_OF_EACH,
    matches,
)

if TYPE_CHECKING:
    from kernelevolve.eval.static.callpath import Checker
    from kernelevolve.eval.static.module import Module


class CallKinds:
    """Mixed into `values.Values`, which sets the attributes and defines the methods declared here."""

    if TYPE_CHECKING:
        c: Checker
        mod: Module
        owner: str | None
        env: dict[str, Kinds]
        compute_events: int
        local_calls: int
        module_vars: dict[str, tuple[str, ...]]
        call_shapes: dict[int, Shape | None]
        storage_queries: set[int]

        def kinds(self, e: ast.AST | None) -> Kinds: ...

        def host(self, node: ast.AST, what: str, text: bool = False) -> None: ...

        def compute(self, node: ast.AST, what: str) -> None: ...

        def _is_self(self, node: ast.AST) -> bool: ...

        def _member(self, value: Kinds, attr: str) -> Kinds: ...

        def _store(
            self,
            at: ast.AST,
            root: ast.expr,
            keys: list[ast.expr],
            kinds: Kinds,
            values: list[ast.expr],
            attribute: str = "",
        ) -> None: ...

    def _call(self, e: ast.Call) -> Kinds:
        func = e.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in STORAGE_QUERIES
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Attribute)
            and func.value.func.attr in STORAGE_METHODS
        ):
            self.storage_queries.add(
                id(func.value)
            )  # x.untyped_storage().data_ptr(): a pointer, not the data
        args = [self.kinds(a) for a in e.args]
        kw = {k.arg: self.kinds(k.value) for k in e.keywords}
        every = frozenset().union(*args, *kw.values())
        if isinstance(func, ast.Subscript):
            self.kinds(func.slice)
            held = self.kinds(func.value)
            if callee_name(func.value) in self.mod.triton_kernels or K in held:
                self.c.launches += 1
                return EMPTY
            return self._call_value(e, held, args, every, (held | every) & {D, H}, kw)
        name = self.mod.resolve(func)
        if name is not None:
            return self._library_call(e, name, args, every)
        if isinstance(func, ast.Name):
            return self._local_call(e, func.id, args, kw, every)
        if isinstance(func, ast.Attribute):
            recv = func.value
            if self._is_self(recv) and self.owner is not None:
                return self._self_call(e, func.attr, args, kw, every)
            if isinstance(recv, ast.Name) and recv.id in self.mod.classes and recv.id not in self.env:
                return self._class_call(e, recv.id, func.attr, args, kw)
            held_class: str | None = None
            if isinstance(recv, ast.Name) and recv.id not in self.env:
                held_class = self.mod.instances.get(recv.id)  # RUNNER = Runner() at module level
            elif isinstance(recv, ast.Attribute) and self._is_self(recv.value) and self.owner is not None:
                held_class = self.c.local_attrs.get(self.owner, {}).get(recv.attr)  # self.runner = Runner()
            if held_class is not None:
                return self._local(
                    e,
                    self.c.reach_method(held_class, func.attr, args, kw),
                    self.c.method_qual(held_class, func.attr),
                )
            rk = self.kinds(recv)
            found = self._method_of_local_classes(func.attr, rk, args, kw)
            return self._method_call(e, func.attr, recv, rk, args, every) | found
        return self._call_value(e, self.kinds(func), args, every, every & {D, H}, kw)

    def _method_of_local_classes(
        self, attr: str, rk: Kinds, args: list[Kinds], kw: dict[str | None, Kinds]
    ) -> Kinds:
        """`cfg.launch(kernel, x)` on a value the checks do not type (a local class's instance held in a
        variable or on ctx): every local class's method of that name is reached with these arguments, so
        a kernel passed in is launched there (reaching more code only checks more; autograd's and
        nn.Module's entry points are reached their own ways)."""
        if T in rk or attr.startswith("__") or attr in ("forward", "backward", "setup_context", "apply"):
            return EMPTY
        found = EMPTY
        for cls in self.mod.classes:
            if attr in self.mod.class_methods(cls):
                found |= self.c.reach_method(cls, attr, args, kw)
        return found

    def _class_call(
        self, e: ast.Call, cls: str, attr: str, args: list[Kinds], kw: dict[str | None, Kinds]
    ) -> Kinds:
        """`Cls.method(...)` of a local class; `Cls.apply(...)`: a torch.autograd.Function's forward(ctx, ...),
        and its backward(ctx, *upstream gradients), which runs on the call path too."""
        applied = attr == "apply"
        method = "forward" if applied else attr
        if applied:
            self.c.reach_method(cls, "backward", [INPUT] * max(1, len(args)), {}, binds_ctx=True)
        return self._local(
            e,
            self.c.reach_method(cls, method, args, kw, skip_first=applied, binds_ctx=applied),
            self.c.method_qual(cls, method),
        )

    def _call_value(
        self,
        e: ast.Call,
        held: Kinds,
        args: list[Kinds],
        every: Kinds,
        result: Kinds,
        kw: dict[str | None, Kinds] | None = None,
    ) -> Kinds:
        """A call of a value (a local name, an element, a call's result) that returns `result`, unless it is
        a tensor's method taken as a value: then it is that method's call. A value holding a kernel (a
        launch bound by `functools.partial(kernel[grid], ...)`) called is a launch; one holding local
        functions (`LOCAL`) is a call of each with these arguments."""
        if K in held:
            self.c.launches += 1
        for kind in sorted(held):
            if kind.startswith(LOCAL):
                name = kind[len(LOCAL) :]
                summary = self.c.reach(name, self.mod.functions[name], None, args, kw or {}, False)
                result |= self._local(e, summary, name)
            if kind == METHOD and D in every:
                self._dynamic(e, "a tensor method chosen by a computed name, called on input data")
            elif kind.startswith(METHOD) and kind != METHOD:
                result |= self._method_call(e, kind[len(METHOD) :], e.func, (held & {D}) | {T}, args, every)
        return result

    def _dynamic(self, node: ast.AST, what: str) -> None:
        """A call the checks cannot name (every mode: it hides which PyTorch op runs)."""
        self.compute_events += 1
        self.c.issue("dynamic_code", node, f"{what}: the checks cannot tell what it computes")

    def _local(self, e: ast.Call, summary: Kinds, qual: str) -> Kinds:
        self.local_calls += 1
        self.call_shapes[id(e)] = self.c.shapes.get(qual, UNKNOWN_SHAPE)
        if qual in self.c.torch_using:
            self.compute_events += 1  # the callee's own PyTorch calls are reported where they are
        return summary

    def _modules_call(
        self, classes: tuple[str, ...], args: list[Kinds], kw: dict[str | None, Kinds]
    ) -> Kinds:
        """A call of a container of local modules, or of one of them (`static.module_lists`)."""
        self.local_calls += 1
        if any(self.c.method_qual(cls, "forward") in self.c.torch_using for cls in classes):
            self.compute_events += 1
        return self.c.reach_modules(classes, args, kw)

    def _library_call(self, e: ast.Call, name: str, args: list[Kinds], every: Kinds) -> Kinds:
        if name == "functools.partial" and args:  # a partial of a kernel launch still holds the kernel
            return (args[0] & {K}) | (every & {D, H})
        if not name.startswith("torch."):
            if ({T, D} <= every or H in every) and not matches(name, TENSOR_LIBRARIES_OK):
                self.host(e, f"{name}() on tensor data")  # numpy, math, operator, struct...
            return every & {D, H}
        if name in TORCH_FRESH:
            return frozenset({T, F})
        if name in TORCH_VIEWS_OF_EACH:
            return frozenset().union(*args)
        if name in TORCH_VIEWS:
            return args[0] if args else EMPTY
        if name in ("torch.clone", "torch.tensor", "torch.as_tensor"):
            return (every - {F, H}) | {T}  # a copy of host values is a tensor again
        if name in TORCH_OK:
            return EMPTY
        self.compute(e, f"{name}()")
        return (every & {D}) | {T}

    def _local_call(
        self, e: ast.Call, fname: str, args: list[Kinds], kw: dict[str | None, Kinds], every: Kinds
    ) -> Kinds:
        if fname in self.module_vars:  # for layer in self.layers: ... layer(x)
            return self._modules_call(self.module_vars[fname], args, kw)
        if fname in self.env:
            return self._call_value(e, self.env[fname], args, every, every & {D, H}, kw)
        if fname in self.c.module_callables:  # rotate = make_rotary(False) at module level, called here
            return self._local(e, *self.c.reach_stored("", self.c.module_callables[fname], args, kw))
        if fname in self.mod.cute_funcs:
            self.c.cute_used = True
            return EMPTY
        if fname in self.mod.functions:
            return self._local(
                e, self.c.reach(fname, self.mod.functions[fname], None, args, kw, False), fname
            )
        if fname in self.mod.classes:
            self.c.reach_class(fname, args, kw, instantiated=True)
            return EMPTY
        if fname in self.mod.instances:  # RUNNER = Runner() at module level, called here
            cls = self.mod.instances[fname]
            return self._local(
                e, self.c.reach_method(cls, "forward", args, kw), self.c.method_qual(cls, "forward")
            )
        if fname in self.mod.applies:  # layer_norm = LayerNorm.apply at module level, called here
            return self._class_call(e, self.mod.applies[fname], "apply", args, kw)
        if fname == "Model":
            self.compute(e, "the reference Model")
            return frozenset({T})
        if fname in COMPUTE_BUILTINS and T in every:
            self.compute(e, f"{fname}() on a tensor")
        on_host = H in every or (fname in HOST_BUILTINS and {T, D} <= every)
        if on_host and fname in COMPUTE_BUILTINS | HOST_BUILTINS:
            self.host(e, f"{fname}() on tensor data", text=fname in ("str", "repr", "format", "ascii"))
        if fname in HOST_CONVERSIONS and ({T, D} <= every or H in every):
            return (every & {D}) | {H}  # a host copy: fine to pass to a kernel, not to compute with
        if fname == "setattr" and len(e.args) >= 3 and self._is_self(e.args[0]):
            self._store(e, e.args[0], [], args[2], [e.args[2]])
        if fname == "getattr" and e.args and self._is_self(e.args[0]):
            return frozenset({S})
        if fname == "getattr" and len(e.args) >= 2:
            name = e.args[1].value if isinstance(e.args[1], ast.Constant) else None
            if isinstance(name, str):  # getattr(x, "clamp") reads as x.clamp
                return self._member(args[0], name)
            if D in args[0]:
                self._dynamic(e, "getattr on input data with a computed name")
            elif T in args[0]:
                return (args[0] & {S}) | {METHOD}  # a method of another tensor, name unknown: see _call_value
            return args[0] & {D, K}
        if fname in ("tuple", "list", "set", "dict", "zip", "enumerate", "reversed", "iter", "next"):
            return every - {F}
        if fname == "range":
            return every & {H}
        if fname in (
            "len",
            "isinstance",
            "issubclass",
            "range",
            "print",
            "type",
            "hasattr",
            "callable",
            "id",
            "hash",
        ):
            return EMPTY
        return every & {D, H}

    def _self_call(
        self, e: ast.Call, attr: str, args: list[Kinds], kw: dict[str | None, Kinds], every: Kinds
    ) -> Kinds:
        owner = self.owner or ""
        if attr in self.mod.class_methods(owner):
            return self._local(e, self.c.reach_method(owner, attr, args, kw), self.c.method_qual(owner, attr))
        cls = self.c.local_attrs.get(owner, {}).get(attr)
        if cls is not None:
            return self._local(
                e, self.c.reach_method(cls, "forward", args, kw), self.c.method_qual(cls, "forward")
            )
        held = self.c.module_lists.get(owner, {}).get(attr)
        if held is not None:  # self.net = nn.Sequential(OwnModule(), ...)
            return self._modules_call(held, args, kw)
        stored = self.c.callables.get(owner, {}).get(attr)
        if stored is not None:  # a lambda, closure or partial __init__ stored on self
            return self._local(e, *self.c.reach_stored(owner, stored, args, kw))
        if attr in self.c.torch_modules.get(owner, ()):
            self.compute(e, f"self.{attr}(...) (a torch.nn layer)")
            return (every & {D}) | {T}
        return every & {D}

    def _counter_step(self, e: ast.Call, recv: ast.expr, rk: Kinds) -> bool:
        """`self.num_batches_tracked.add_(1)`: module state moved by an int (`static.counters`)."""
        return (
            len(e.args) == 1
            and not e.keywords
            and D not in rk
            and is_counter_step(recv, e.args[0], self._is_self)
        )

    def _method_call(
        self, e: ast.Call, attr: str, recv: ast.expr, rk: Kinds, args: list[Kinds], every: Kinds
    ) -> Kinds:
        if attr in MUTATORS:
            keys = e.args[:1] if attr in ("setdefault", "__setitem__") else []
            values = e.args[1:] if keys else list(e.args)
            for arg in e.args:
                if isinstance(arg, ast.Dict):
                    keys += [k for k in arg.keys if k is not None]
                    values += arg.values
            root: ast.expr = recv
            attribute = ""  # the attribute of the root written through (self.<attribute>.setdefault)
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                attribute = root.attr if isinstance(root, ast.Attribute) else attribute
                root = root.value
            value_kinds = frozenset().union(*(self.kinds(v) for v in values))
            self._store(e, root, keys, value_kinds, values, attribute)
        if attr == "numpy":
            self.host(e, ".numpy() (a NumPy view of a tensor)")
        elif attr in HOST_FORMATTERS and ({T, D} <= every or H in every):
            self.host(e, f".{attr}() of tensor data", text=True)
        elif attr in STORAGE_METHODS and {T, D} <= rk and id(e) not in self.storage_queries:
            self.host(e, f".{attr}() (the raw bytes of a tensor)")
        if (attr in HOST_READS or attr == "numpy") and D in rk:
            return (rk & {D}) | {H}
        if T in rk:
            if attr in META_METHODS:
                return EMPTY
            if attr in ALIAS_METHODS:
                return rk
            if attr in NEW_METHODS:
                return frozenset({T, F})
            if attr == "clone":
                return rk - {A, F}
            if attr in ("item", "tolist"):
                return rk & {D}
            if attr == "add_" and self._counter_step(e, recv, rk):
                return rk
            if attr not in TENSOR_METHODS_OK:
                self.compute(e, f".{attr}() on a tensor")
            return ((rk | every) & {D}) | {T}
        if H in rk and attr not in MUTATORS | CONTAINER_READS and attr != "copy":
            self.host(e, f".{attr}() on host copies of tensor data")
            return (rk | every) & {D, H}
        if attr.rstrip("_") in COMPUTE_METHODS:
            self.compute(e, f".{attr}()")
            return ((rk | every) & {D}) | {T}
        if attr in CONTAINER_READS:
            # a kernel read from a table (`KERNELS.get(dtype, default)[grid](...)`) is still a kernel: the
            # element or the default given
            return (rk & {S, D, A, T, H, K}) | (every & {K})
        if attr in META_METHODS:
            return EMPTY
        return rk if attr in ALIAS_METHODS else (rk | every) & {D, H}
