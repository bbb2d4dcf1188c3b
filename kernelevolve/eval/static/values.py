"""What each local name of a call-path function may hold, and the rules read off expressions.

Kinds: a value may be a tensor, data derived from the inputs, an alias of an input, something held
between calls (self attribute / module container), a fresh allocation, a host copy of input data or
a Triton kernel (and a tensor's method taken as a value) (``kinds``). They only grow, so the
call-path fixpoint in ``callpath`` ends quickly. Calls are read by ``calls.CallKinds``, mixed in here.

``torch_compute_op`` (strict only): PyTorch doing the work in the call path: a torch/F call outside
``rules.TORCH_OK``, the ``@`` operator, a call of an ``nn`` layer held by ``ModelNew``, a
compute method on a tensor (any method outside ``TENSOR_METHODS_OK`` on a name known to hold a
tensor; on receivers of unknown type only the ``COMPUTE_METHODS`` names), and arithmetic or
comparison on names known to hold tensors. Tensor-ness is tracked per function in source order:
forward's parameters (unless annotated int/float/bool/str), torch allocations, views of tensors,
tensor parameters and buffers made in ``__init__``; helpers get the kinds of the arguments their
call sites pass, and a helper whose every ``return`` is a tuple of one length gives each unpacked
name (``out, n = helper(x)``) or constant index its own element's kinds. A tensor method taken as
a value (``f = x.clamp``, ``getattr(x, "clamp")``) is that method when called.

``host_compute`` (strict only): the work moved to the host. Host copies of input data
(``.item()``, ``.tolist()``, ``float()`` / ``int()`` of it) are tracked as kind ``host``: passing
them on (to a kernel, into ``torch.tensor``) is fine, computing with them is not (arithmetic,
comparisons, truth tests, ``max`` / ``sorted`` / ``str`` ..., their methods, non-backend library
calls). ``.numpy()``, a tensor's raw storage (other than its pointer or size), text of tensor data
and library calls handed input tensors are host round trips at once. Iterating over a tensor is
not flagged by itself: its elements are tensors, checked like any other.

Launches: ``kernel[grid](...)`` where ``kernel`` names a Triton kernel or holds one (kind
``kernel``: a parameter it was passed as, a module-level or class-level table of kernels).

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

from kernelevolve.eval.static.calls import CallKinds
from kernelevolve.eval.static.kinds import (
    DATA_ATTRS,
    EMPTY,
    LOCAL,
    METHOD,
    A,
    D,
    H,
    K,
    Kinds,
    S,
    Shape,
    T,
)
from kernelevolve.eval.static.module import callee_name, is_static, positional
from kernelevolve.eval.static.rules import (
    COMPILED,
    META_ATTRS,
    PTR_KEYS,
)

if TYPE_CHECKING:
    from kernelevolve.eval.static.callpath import Checker


class Values(CallKinds):
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
        self.module_vars: dict[str, tuple[str, ...]] = {}  # loop names over a container of local modules
        self.tuples: dict[str, Shape] = {}  # names bound to a tuple of known shape
        self.call_shapes: dict[int, Shape | None] = {}  # id() of a local call -> its callee's return shape
        self.return_shapes: list[Shape | None] = []
        self.storage_queries: set[int] = (
            set()
        )  # id() of `x.untyped_storage()` calls asked only for a size/pointer

    def host(self, node: ast.AST, what: str, text: bool = False) -> None:
        """Work on tensor data done on the host (strict only): it leaves the kernels for Python or NumPy.
        `text`: only formats data as text (an error message may): not a fallback in an except handler.
        Lenient runs ignore it altogether (what a host-side helper gets may well be a plain number)."""
        if self.c.strict:
            self.compute_events += 0 if text else 1
            self.c.issue(
                "host_compute",
                node,
                f"{what}: work on tensor data done on the host (Python/NumPy) on ModelNew's call path; "
                f"strict mode needs the work in the {self.c.backend} kernel",
            )

    def truth(self, e: ast.expr) -> Kinds:
        """The kinds of an expression whose truth value is taken (``if``, ``while``, ``and``/``or``, ``not``)."""
        kinds = self.kinds(e)
        if {T, D} <= kinds or H in kinds:
            self.host(e, "the truth value of tensor data")
        return kinds

    def _text_dispatch(self, e: ast.Compare) -> bool:
        """`repr(v) == '3.14'` (or `str`, `!=`, `in` a tuple of literals): which program a scalar input needs
        (compiler_seed's dispatch). Fine whatever `v` is: a tensor's text starts with "tensor(", so against
        literals that do not it says nothing about a tensor's values."""
        if not all(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in e.ops):
            return False
        texts: list[ast.Call] = []
        literals: list[ast.expr] = []
        for side in (e.left, *e.comparators):
            if (
                isinstance(side, ast.Call)
                and isinstance(side.func, ast.Name)
                and side.func.id in ("repr", "str")
                and side.func.id not in self.env
                and side.func.id not in self.mod.functions
                and len(side.args) == 1
                and not side.keywords
            ):
                texts.append(side)
            else:
                literals.extend(side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side])
        if len(texts) != 1 or not literals:
            return False
        if not all(
            isinstance(x, ast.Constant) and isinstance(x.value, str) and not x.value.startswith("tensor")
            for x in literals
        ):
            return False
        self.kinds(texts[0].args[0])  # still on the call path (a helper it calls is reached)
        return True

    def _on_host(self, node: ast.AST, kinds: Kinds, what: str) -> None:
        if H in kinds:
            self.host(node, f"{what} on host copies of tensor data")

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
            self.module_vars.pop(target.id, None)
            shape = self.shape_of(value)
            if shape is None:
                self.tuples.pop(target.id, None)
            else:
                self.tuples[target.id] = shape
        elif isinstance(target, ast.Starred):
            self._bind(target.value, kinds, None, stmt)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
            shape = None if pairs else self.shape_of(value)
            unpack = (
                bool(shape)
                and len(shape) == len(target.elts)  # type: ignore[arg-type]
                and not any(isinstance(t, ast.Starred) for t in target.elts)
            )
            for i, element in enumerate(target.elts):
                item = value.elts[i] if pairs else None  # type: ignore[union-attr]
                if item is not None:
                    self._bind(element, self.kinds(item), item, stmt)
                else:
                    self._bind(element, shape[i] if unpack else kinds, None, stmt)  # type: ignore[index]
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
        if K in kinds:
            self._fills_with_kernel(root, attribute)
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

    def _fills_with_kernel(self, root: ast.expr, attribute: str) -> None:
        """A launcher cache filled on first use (`_CACHE[key] = functools.partial(kernel[grid], ...)`): reads
        of the cache hold a kernel too, so calling what it returns is a launch. Walked again once it grows."""
        if isinstance(root, ast.Name) and root.id not in self.mod.kernel_holders:
            self.mod.kernel_holders.add(root.id)
            self.c.changed = True
        elif self._is_self(root) and self.owner is not None and attribute:
            filled = self.c.kernel_attrs.setdefault(self.owner, set())
            if attribute not in filled:
                filled.add(attribute)
                self.c.changed = True

    def shape_of(self, value: ast.expr | None) -> Shape | None:
        """The element kinds of a tuple-valued name or local call: None when it is not a tuple of known
        shape, ``UNKNOWN_SHAPE`` for a local call not walked yet. Never evaluates `value` (its kinds were
        taken already)."""
        if isinstance(value, ast.Name):
            return self.tuples.get(value.id)
        if isinstance(value, ast.Call):
            return self.call_shapes.get(id(value))
        return None

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
            whole = self.kinds(e.value)
            shape = self.shape_of(e.value)
            index = e.slice.value if isinstance(e.slice, ast.Constant) else None
            if (
                shape
                and isinstance(index, int)
                and not isinstance(index, bool)
                and -len(shape) <= index < len(shape)
            ):
                return shape[index]
            return whole
        if isinstance(e, ast.BinOp):
            both = self.kinds(e.left) | self.kinds(e.right)
            if isinstance(e.op, ast.MatMult):
                self.compute(e, "the @ operator")
            elif T in both:
                self.compute(e, f"tensor arithmetic ({type(e.op).__name__})")
            self._on_host(e, both, f"arithmetic ({type(e.op).__name__})")
            return both & {D, T, H}
        if isinstance(e, ast.UnaryOp):
            operand = self.truth(e.operand) if isinstance(e.op, ast.Not) else self.kinds(e.operand)
            if not isinstance(e.op, ast.Not):
                if T in operand:
                    self.compute(e, f"tensor arithmetic ({type(e.op).__name__})")
                self._on_host(e, operand, f"arithmetic ({type(e.op).__name__})")
            return operand & {D, T, H}
        if isinstance(e, ast.Compare):
            if self._text_dispatch(e):
                return EMPTY
            parts = [self.kinds(x) for x in (e.left, *e.comparators)]
            joined = frozenset().union(*parts)
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in e.ops):
                return EMPTY  # an identity test reads no data
            if T in joined and not all(
                isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops
            ):
                self.compute(e, "tensor comparison")
            self._on_host(e, joined, "a comparison")
            return joined & {D, T, H}
        if isinstance(e, ast.BoolOp):  # every operand but the last is tested for truth
            return frozenset().union(*(self.truth(x) for x in e.values[:-1]), self.kinds(e.values[-1]))
        if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
            return frozenset().union(*(self.kinds(x) for x in e.elts))
        if isinstance(e, ast.Dict):
            for key in e.keys:
                self.kinds(key)
            return frozenset().union(*(self.kinds(v) for v in e.values))
        if isinstance(e, ast.IfExp):
            self.truth(e.test)
            return self.kinds(e.body) | self.kinds(e.orelse)
        if isinstance(e, ast.NamedExpr):
            kinds = self.kinds(e.value)
            self.env[e.target.id] = kinds
            self.tuples.pop(e.target.id, None)
            return kinds
        if isinstance(e, ast.Lambda):
            saved, saved_tuples = dict(self.env), dict(self.tuples)
            params = [a.arg for a in (*e.args.posonlyargs, *e.args.args, *e.args.kwonlyargs)]
            given = self.c.closure_params.get(id(e), {})  # a lambda a factory returns: its calls' kinds
            self.env.update({a: given.get(a, EMPTY) for a in params})
            for param in params:
                self.tuples.pop(param, None)
            self.kinds(e.body)
            self.env, self.tuples = saved, saved_tuples
            return EMPTY
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for gen in e.generators:
                self._bind(gen.target, self.kinds(gen.iter), None, ast.Pass())
                for cond in gen.ifs:
                    self.truth(cond)
            if isinstance(e, ast.DictComp):
                return self.kinds(e.key) | self.kinds(e.value)
            return self.kinds(e.elt)
        if isinstance(e, (ast.Starred, ast.Await, ast.Yield, ast.YieldFrom)):
            return self.kinds(e.value)
        if isinstance(e, ast.FormattedValue):  # f"{v}": the tensor's values as text
            value = self.kinds(e.value)
            if {T, D} <= value or H in value:
                self.host(e, "formatting tensor data into a string", text=True)
            self.kinds(e.format_spec)
            return EMPTY
        for child in ast.iter_child_nodes(e):
            self.kinds(child)
        return EMPTY

    def _name(self, e: ast.Name) -> Kinds:
        if e.id in self.env:
            return self.env[e.id]
        if e.id in self.mod.triton_kernels:
            return frozenset({K})
        holds = frozenset({K}) if e.id in self.mod.kernel_holders else EMPTY
        if e.id in self.mod.instances:  # a module-level instance of a local class: its methods are reachable
            self.c.reach_class(self.mod.instances[e.id], [], {}, instantiated=False)
        if e.id == "Model":
            self.compute(e, "the reference Model")
        elif e.id in self.mod.cute_funcs:
            self.c.cute_used = True
        elif e.id in self.mod.classes and e.id != "ModelNew":
            self.c.reach_class(e.id, [], {}, instantiated=False)
        functions = {e.id} if e.id in self.mod.functions else self.mod.function_holders.get(e.id, frozenset())
        for name in functions:  # passed as a callback, or held in a table: still on the call path
            self.c.reach(name, self.mod.functions[name], None, [], {}, False)
        held = frozenset(LOCAL + name for name in functions)  # called later: see `Calls._call_value`
        return holds | held | (frozenset({S}) if e.id in self.mod.containers else EMPTY)

    def _attribute(self, e: ast.Attribute) -> Kinds:
        if self._is_self(e.value) and self.owner is not None:
            methods = self.mod.class_methods(self.owner)
            if e.attr in methods:
                self.c.reach_method(self.owner, e.attr, [], {})
                return EMPTY
            if e.attr in self.c.local_attrs.get(self.owner, {}):
                self.c.reach_class(self.c.local_attrs[self.owner][e.attr], [], {}, instantiated=False)
            kernel_attrs = self.mod.class_kernel_attrs(self.owner) | self.c.kernel_attrs.get(
                self.owner, set()
            )
            holds = frozenset({K}) if e.attr in kernel_attrs else EMPTY
            return holds | (
                frozenset({S, T}) if e.attr in self.c.tensor_attrs.get(self.owner, ()) else frozenset({S})
            )
        if e.attr in META_ATTRS or self.mod.resolve(e) is not None:
            return EMPTY
        if (
            isinstance(e.value, ast.Name)
            and e.value.id in self.mod.classes
            and e.value.id not in self.env
            and e.attr in self.mod.class_kernel_attrs(e.value.id)
        ):
            return frozenset({K})  # Cls.KERNELS
        return self._member(self.kinds(e.value), e.attr)

    def _member(self, value: Kinds, attr: str) -> Kinds:
        """`value.attr` (or `getattr(value, "attr")`) read as a value, not called on the spot."""
        if attr in DATA_ATTRS:
            return value
        if attr in ("weight", "bias"):
            return (value & {S}) | {T}
        if T in value and attr not in META_ATTRS:
            # maybe a bound method of a tensor: remember which, so calling it later is that method call
            return (value & {S, D, K}) | {METHOD + attr}
        return value & {S, D, K, H}
