"""What each local name of a call-path function may hold, and the rules read off expressions.

Kinds: a value may be a tensor, data derived from the inputs, an alias of an input, something held
between calls (self attribute / module container) or a fresh allocation. They only grow, so the
call-path fixpoint in ``static_callpath`` ends quickly.

``torch_compute_op`` (strict only): PyTorch doing the work in the call path: a torch/F call outside
``static_rules.TORCH_OK``, the ``@`` operator, a call of an ``nn`` layer held by ``ModelNew``, a
compute method on a tensor (any method outside ``TENSOR_METHODS_OK`` on a name known to hold a
tensor; on receivers of unknown type only the ``COMPUTE_METHODS`` names), and arithmetic or
comparison on names known to hold tensors. Tensor-ness is tracked per function in source order:
forward's parameters (unless annotated int/float/bool/str), torch allocations, views of tensors,
tensor parameters and buffers made in ``__init__``; helpers get the kinds of the arguments their
call sites pass.

``state_between_calls`` (stores): data derived from the inputs stored on self (outside
``__init__``) or into module globals, and any cache keyed by ``data_ptr()`` or ``id()``. A model
whose reference keeps state between calls (KernelBench L3/33 reassigns ``self.hidden`` on every
call) may store into ModelNew's attributes of the same names (``Checker.reference_state``). Compiled
kernels (``cute.compile``, ``functools.partial``) and shape/config values may be cached.
Trade-off: scratch buffers are fine when made in ``__init__`` or stored straight from a fresh
allocation (``self._buf[shape] = torch.empty(...)``), because their contents are rewritten each
call; a returned tensor may not persist, even a pre-allocated one, since that is what a cached
result looks like (and the caller's previous result would change under it). Anything subtler
(state hidden in closures or local objects, work done in ``__init__`` from a predicted seed) is
left to the correctness trials, which call one instance on several fresh seeded inputs.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from kernelevolve.eval.static_module import callee_name, is_static, positional
from kernelevolve.eval.static_rules import (
    ALIAS_METHODS,
    COMPILED,
    COMPUTE_METHODS,
    CONTAINER_READS,
    META_ATTRS,
    META_METHODS,
    MUTATORS,
    NEW_METHODS,
    PTR_KEYS,
    TENSOR_METHODS_OK,
    TORCH_FRESH,
    TORCH_OK,
    TORCH_VIEWS,
)

if TYPE_CHECKING:
    from kernelevolve.eval.static_callpath import Checker

Kinds = frozenset[str]
# What a value may be: a tensor, data derived from the inputs, an alias of an input, something held
# between calls (self attribute / module container), a fresh allocation.
T, D, A, S, F = "tensor", "data", "alias", "state", "fresh"
EMPTY: Kinds = frozenset()
INPUT: Kinds = frozenset({T, D, A})


class Values:
    """Tracks what each local name of one call-path function may hold; ``Flow`` walks its statements."""

    def __init__(
        self,
        checker: Checker,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        owner: str | None,
        params: dict[str, Kinds],
        is_forward: bool,
    ) -> None:
        self.c, self.mod, self.node, self.owner, self.is_forward = (
            checker,
            checker.mod,
            node,
            owner,
            is_forward,
        )
        args = positional(node)
        self.self_name = args[0] if owner and args and not is_static(node) else None
        self.is_init = node.name == "__init__"
        every_arg = [*args, *(a.arg for a in node.args.kwonlyargs)]
        every_arg += [a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None]
        self.env: dict[str, Kinds] = {
            name: params.get(name, EMPTY) for name in every_arg if name != self.self_name
        }
        self.returns = EMPTY
        self.returned: set[str] = set()
        self.stored: dict[str, ast.AST] = {}
        self.compute_events = 0
        self.local_calls = 0

    def compute(self, node: ast.AST, what: str) -> None:
        self.compute_events += 1
        if self.c.strict:
            self.c.issue(
                "torch_compute_op",
                node,
                f"{what} computes in PyTorch on ModelNew's call path; strict mode needs the work in the {self.c.backend} kernel",
            )

    def _is_self(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and self.self_name is not None and node.id == self.self_name

    # ---- stores -------------------------------------------------------------------------------

    def _bind(self, target: ast.expr, kinds: Kinds, value: ast.expr | None, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = kinds
        elif isinstance(target, ast.Starred):
            self._bind(target.value, kinds, None, stmt)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
            for i, element in enumerate(target.elts):
                item = value.elts[i] if pairs else None  # type: ignore[union-attr]
                self._bind(element, self.kinds(item) if item is not None else kinds, item, stmt)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            keys: list[ast.expr] = []
            root: ast.expr = target
            attribute = ""  # the attribute of the root written through (self.<attribute>...)
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                if isinstance(root, ast.Subscript):
                    keys.append(root.slice)
                    self.kinds(root.slice)
                else:
                    attribute = root.attr
                root = root.value
            self._store(stmt, root, keys, kinds, [value] if value is not None else [], attribute)

    def _store(
        self,
        at: ast.AST,
        root: ast.expr,
        keys: list[ast.expr],
        kinds: Kinds,
        values: list[ast.expr],
        attribute: str = "",
    ) -> None:
        """A write into something that outlives the call: self (outside __init__) or a module global."""
        if self._is_self(root) and not self.is_init:
            if not keys and self.owner == "ModelNew" and attribute in self.c.reference_state:
                return  # state the reference itself keeps between calls, under the same name
            where = "self"
        elif isinstance(root, ast.Name) and root.id not in self.env and root.id in self.c.persistent_names:
            where = f"module-level {root.id}"
        else:
            return
        for key in keys:
            parts = (callee_name(n.func if isinstance(n, ast.Call) else n) for n in ast.walk(key))
            if any(part in PTR_KEYS for part in parts):
                self.c.issue(
                    "state_between_calls",
                    at,
                    f"a cache on {where} keyed by data_ptr()/id() carries results between calls",
                )
        if any(self._compiled(v) for v in values):
            return
        if kinds & {D, A}:
            self.c.issue(
                "state_between_calls",
                at,
                f"stores data derived from the inputs on {where}; results may not be carried between calls",
            )
        for value in values:
            if isinstance(value, ast.Name):
                self.stored.setdefault(value.id, at)

    def _compiled(self, value: ast.expr) -> bool:
        """A compiled kernel or launcher: fine to cache on self, whatever the arguments."""
        if not isinstance(value, ast.Call):
            return False
        name = self.mod.resolve(value.func) or ""
        local = callee_name(value.func)
        return (
            name in COMPILED
            or name == "functools.partial"
            or local in self.mod.cute_funcs | self.mod.triton_kernels
        )

    # ---- expressions --------------------------------------------------------------------------

    def kinds(self, e: ast.AST | None) -> Kinds:  # noqa: C901 - one dispatch over node types
        if e is None or isinstance(e, ast.Constant):
            return EMPTY
        if isinstance(e, ast.Name):
            return self._name(e)
        if isinstance(e, ast.Attribute):
            return self._attribute(e)
        if isinstance(e, ast.Call):
            return self._call(e)
        if isinstance(e, ast.Subscript):
            self.kinds(e.slice)
            return self.kinds(e.value)
        if isinstance(e, ast.BinOp):
            both = self.kinds(e.left) | self.kinds(e.right)
            if isinstance(e.op, ast.MatMult):
                self.compute(e, "the @ operator")
            elif T in both:
                self.compute(e, f"tensor arithmetic ({type(e.op).__name__})")
            return (both & {D}) | (both & {T})
        if isinstance(e, ast.UnaryOp):
            operand = self.kinds(e.operand)
            if T in operand and not isinstance(e.op, ast.Not):
                self.compute(e, f"tensor arithmetic ({type(e.op).__name__})")
            return operand & {D, T}
        if isinstance(e, ast.Compare):
            parts = [self.kinds(x) for x in (e.left, *e.comparators)]
            joined = frozenset().union(*parts)
            if T in joined and not all(
                isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops
            ):
                self.compute(e, "tensor comparison")
            return joined & {D, T}
        if isinstance(e, (ast.BoolOp, ast.Tuple, ast.List, ast.Set)):
            items = e.values if isinstance(e, ast.BoolOp) else e.elts
            return frozenset().union(*(self.kinds(x) for x in items))
        if isinstance(e, ast.Dict):
            for key in e.keys:
                self.kinds(key)
            return frozenset().union(*(self.kinds(v) for v in e.values))
        if isinstance(e, ast.IfExp):
            self.kinds(e.test)
            return self.kinds(e.body) | self.kinds(e.orelse)
        if isinstance(e, ast.NamedExpr):
            kinds = self.kinds(e.value)
            self.env[e.target.id] = kinds
            return kinds
        if isinstance(e, ast.Lambda):
            saved = dict(self.env)
            self.env.update({a.arg: EMPTY for a in (*e.args.posonlyargs, *e.args.args, *e.args.kwonlyargs)})
            self.kinds(e.body)
            self.env = saved
            return EMPTY
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for gen in e.generators:
                self._bind(gen.target, self.kinds(gen.iter), None, ast.Pass())
                for cond in gen.ifs:
                    self.kinds(cond)
            if isinstance(e, ast.DictComp):
                return self.kinds(e.key) | self.kinds(e.value)
            return self.kinds(e.elt)
        if isinstance(e, (ast.Starred, ast.Await, ast.Yield, ast.YieldFrom)):
            return self.kinds(e.value)
        for child in ast.iter_child_nodes(e):
            self.kinds(child)
        return EMPTY

    def _name(self, e: ast.Name) -> Kinds:
        if e.id in self.env:
            return self.env[e.id]
        if e.id == "Model":
            self.compute(e, "the reference Model")
        elif e.id in self.mod.cute_funcs:
            self.c.cute_used = True
        elif e.id in self.mod.functions:  # passed as a callback: still on the call path
            self.c.reach(e.id, self.mod.functions[e.id], None, [], {}, False)
        elif e.id in self.mod.classes and e.id != "ModelNew":
            self.c.reach_class(e.id, [], {}, instantiated=False)
        return frozenset({S}) if e.id in self.mod.containers else EMPTY

    def _attribute(self, e: ast.Attribute) -> Kinds:
        if self._is_self(e.value) and self.owner is not None:
            methods = self.mod.class_methods(self.owner)
            if e.attr in methods:
                self.c.reach_method(self.owner, e.attr, [], {})
                return EMPTY
            if e.attr in self.c.local_attrs.get(self.owner, {}):
                self.c.reach_class(self.c.local_attrs[self.owner][e.attr], [], {}, instantiated=False)
            return frozenset({S, T}) if e.attr in self.c.tensor_attrs.get(self.owner, ()) else frozenset({S})
        if e.attr in META_ATTRS or self.mod.resolve(e) is not None:
            return EMPTY
        value = self.kinds(e.value)
        if e.attr in ("T", "mT", "H", "mH", "data", "real", "imag"):
            return value
        if e.attr in ("weight", "bias"):
            return (value & {S}) | {T}
        return value & {S, D}

    def _call(self, e: ast.Call) -> Kinds:
        func = e.func
        args = [self.kinds(a) for a in e.args]
        kw = {k.arg: self.kinds(k.value) for k in e.keywords}
        every = frozenset().union(*args, *kw.values())
        if isinstance(func, ast.Subscript):
            self.kinds(func.slice)
            if callee_name(func.value) in self.mod.triton_kernels:
                self.c.launches += 1
                return EMPTY
            return (self.kinds(func.value) | every) & {D}
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
                method = "forward" if func.attr == "apply" else func.attr
                return self._local(
                    self.c.reach_method(recv.id, method, args, kw, skip_first=func.attr == "apply"),
                    f"{recv.id}.{method}",
                )
            if isinstance(recv, ast.Attribute) and self._is_self(recv.value) and self.owner is not None:
                cls = self.c.local_attrs.get(self.owner, {}).get(recv.attr)
                if cls is not None:
                    return self._local(self.c.reach_method(cls, func.attr, args, kw), f"{cls}.{func.attr}")
            return self._method_call(e, func.attr, recv, self.kinds(recv), args, every)
        self.kinds(func)
        return every & {D}

    def _local(self, summary: Kinds, qual: str) -> Kinds:
        self.local_calls += 1
        if qual in self.c.torch_using:
            self.compute_events += 1  # the callee's own PyTorch calls are reported where they are
        return summary

    def _library_call(self, e: ast.Call, name: str, args: list[Kinds], every: Kinds) -> Kinds:
        if not name.startswith("torch."):
            return every & {D}
        if name in TORCH_FRESH:
            return frozenset({T, F})
        if name in TORCH_VIEWS:
            return args[0] if args else EMPTY
        if name in ("torch.clone", "torch.tensor", "torch.as_tensor"):
            return (every - {F}) | {T}
        if name in TORCH_OK:
            return EMPTY
        self.compute(e, f"{name}()")
        return (every & {D}) | {T}

    def _local_call(
        self, e: ast.Call, fname: str, args: list[Kinds], kw: dict[str | None, Kinds], every: Kinds
    ) -> Kinds:
        if fname in self.env:
            return every & {D}
        if fname in self.mod.cute_funcs:
            self.c.cute_used = True
            return EMPTY
        if fname in self.mod.functions:
            return self._local(self.c.reach(fname, self.mod.functions[fname], None, args, kw, False), fname)
        if fname in self.mod.classes:
            self.c.reach_class(fname, args, kw, instantiated=True)
            return EMPTY
        if fname == "Model":
            self.compute(e, "the reference Model")
            return frozenset({T})
        if fname in ("sum", "max", "min", "abs", "pow", "round", "sorted", "divmod") and T in every:
            self.compute(e, f"{fname}() on a tensor")
        if fname == "setattr" and len(e.args) >= 3 and self._is_self(e.args[0]):
            self._store(e, e.args[0], [], args[2], [e.args[2]])
        if fname == "getattr" and e.args and self._is_self(e.args[0]):
            return frozenset({S})
        if fname in ("tuple", "list", "set", "dict", "zip", "enumerate", "reversed", "iter", "next"):
            return every - {F}
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
        return every & {D}

    def _self_call(
        self, e: ast.Call, attr: str, args: list[Kinds], kw: dict[str | None, Kinds], every: Kinds
    ) -> Kinds:
        owner = self.owner or ""
        if attr in self.mod.class_methods(owner):
            return self._local(self.c.reach_method(owner, attr, args, kw), f"{owner}.{attr}")
        cls = self.c.local_attrs.get(owner, {}).get(attr)
        if cls is not None:
            return self._local(self.c.reach_method(cls, "forward", args, kw), f"{cls}.forward")
        if attr in self.c.torch_modules.get(owner, ()):
            self.compute(e, f"self.{attr}(...) (a torch.nn layer)")
            return (every & {D}) | {T}
        return every & {D}

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
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            value_kinds = frozenset().union(*(self.kinds(v) for v in values))
            self._store(e, root, keys, value_kinds, values)
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
            if attr not in TENSOR_METHODS_OK:
                self.compute(e, f".{attr}() on a tensor")
            return ((rk | every) & {D}) | {T}
        if attr.rstrip("_") in COMPUTE_METHODS:
            self.compute(e, f".{attr}()")
            return ((rk | every) & {D}) | {T}
        if attr in CONTAINER_READS:
            return rk & {S, D, A, T}
        if attr in META_METHODS:
            return EMPTY
        return rk if attr in ALIAS_METHODS else (rk | every) & {D}
