"""Lower a traced aten graph to the fused IR (kernelevolve.variation.codegen.ir).

Every tensor value carries its dimensions as runs of axes (a run, not a single axis, because a
``view`` may merge dimensions). Broadcasting unifies the axes it aligns (union-find); a view
regroups runs; a reduction records the axes it removes. Whatever we cannot express this way (a
view that splits a dimension, a transposed read of the same input, a gather, a matmul...) raises
LoweringError with a reason.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

from kernelevolve.variation.codegen.ir import FusedProgram, Operand
from kernelevolve.variation.codegen.trace import TracedProgram

Dims = tuple[tuple[int, ...], ...]


class LoweringError(Exception):
    pass


UNARY = {
    "neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
    "reciprocal", "sigmoid", "tanh", "erf", "sin", "cos", "floor", "ceil", "trunc", "round", "sign",
    "isnan", "isinf", "logical_not", "bitwise_not",
}  # fmt: skip
BINARY = {
    "add", "sub", "mul", "div", "maximum", "minimum", "gt", "lt", "ge", "le", "eq", "ne",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "pow",
    "rsub", "clamp_min", "clamp_max", "fmax", "fmin",
}  # fmt: skip
BOOL_RESULT = {"gt", "lt", "ge", "le", "eq", "ne", "isnan", "isinf", "not", "and", "or", "xor", "to_bool"}
RENAME = {
    "logical_not": "not", "bitwise_not": "not", "logical_and": "and", "bitwise_and": "and",
    "logical_or": "or", "bitwise_or": "or", "logical_xor": "xor", "bitwise_xor": "xor",
    "clamp_min": "maximum", "clamp_max": "minimum", "fmax": "maximum", "fmin": "minimum",
}  # fmt: skip
IDENTITY = {"clone", "alias", "detach", "lift_fresh_copy", "contiguous"}
HOST_BINARY = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
}  # fmt: skip


@dataclass
class Value:
    name: str  # op name in the IR
    dims: Dims | None  # None for scalars that are not tensors (hosts, float args, literals)
    is_bool: bool = False


class _Axes:
    """Union-find over axes; a class keeps the input dimension that sizes it, if any."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}
        self.size: dict[int, int] = {}
        self.source: dict[int, tuple[str, int]] = {}

    def new(self, size: int, source: tuple[str, int] | None = None) -> int:
        a = len(self.parent)
        self.parent[a] = a
        self.size[a] = size
        if source is not None:
            self.source[a] = source
        return a

    def find(self, a: int) -> int:
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self.size[ra] != self.size[rb]:
            raise LoweringError(f"broadcast of sizes {self.size[ra]} and {self.size[rb]}")
        if ra not in self.source and rb in self.source:
            ra, rb = rb, ra
        self.parent[rb] = ra


def _bind(node: Any) -> dict[str, Any]:
    """Arguments of an aten call by schema name, defaults filled in."""
    schema = node.target._schema
    bound: dict[str, Any] = {}
    positional = list(node.args)
    for arg in schema.arguments:
        if arg.kwarg_only:
            if arg.name in node.kwargs:
                bound[arg.name] = node.kwargs[arg.name]
            elif arg.has_default_value():
                bound[arg.name] = arg.default_value
        elif positional:
            bound[arg.name] = positional.pop(0)
        elif arg.name in node.kwargs:
            bound[arg.name] = node.kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
    return bound


def _live_nodes(graph: Any) -> set[Any]:
    out = next(n for n in graph.nodes if n.op == "output")
    live: set[Any] = set()
    stack = [out]
    while stack:
        n = stack.pop()
        if n in live:
            continue
        live.add(n)
        stack.extend(n.all_input_nodes)
    return live


class Lowerer:
    def __init__(self, traced: TracedProgram) -> None:
        self.traced = traced
        self.ax = _Axes()
        self.env: dict[str, Any] = {}  # fx node name -> Value or tuple of Value|None (max.dim)
        self.ops: list[dict[str, Any]] = []  # raw ops; axes resolved in finish()
        self.hosts: list[tuple[str, Any]] = []  # (name, expr or ("count", [axes]))
        self.args: list[tuple[Any, tuple[int | None, ...]]] = []

    # ---- values -------------------------------------------------------------------------
    def emit(
        self, kind: str, fn: str, args: tuple[Operand, ...], dims: Dims | None, is_bool: bool = False
    ) -> Value:
        name = f"v{len(self.ops)}"
        self.ops.append(
            {"name": name, "kind": kind, "fn": fn, "args": args, "dims": dims, "is_bool": is_bool}
        )
        return Value(name, dims, is_bool)

    def operand(self, x: Any) -> tuple[Operand, Dims, bool]:
        import torch

        if isinstance(x, torch.fx.Node):
            v = self.env.get(x.name)
            if not isinstance(v, Value):
                raise LoweringError(f"operand {x.name} is not a value")
            return v.name, v.dims or (), v.is_bool
        if isinstance(x, bool):
            return x, (), True
        if isinstance(x, (int, float)):
            return x, (), False
        raise LoweringError(f"unsupported operand {type(x).__name__}")

    def broadcast(self, dims_list: list[Dims]) -> Dims:
        rank = max((len(d) for d in dims_list), default=0)
        out: list[tuple[int, ...]] = []
        for pos in range(rank):
            chosen: tuple[int, ...] = ()
            for dims in dims_list:
                i = pos - (rank - len(dims))
                if i < 0 or not dims[i]:
                    continue
                if not chosen:
                    chosen = dims[i]
                elif len(chosen) != len(dims[i]):
                    raise LoweringError("broadcast between a merged (viewed) dimension and a plain one")
                else:
                    for a, b in zip(chosen, dims[i], strict=True):
                        self.ax.union(a, b)
            out.append(chosen)
        return tuple(out)

    def pointwise(self, fn: str, operands: list[Any], is_bool: bool | None = None) -> Value:
        refs, dims_list, bools = [], [], []
        for x in operands:
            ref, dims, b = self.operand(x)
            refs.append(ref)
            dims_list.append(dims)
            bools.append(b)
        dims = self.broadcast(dims_list)
        if is_bool is None:
            is_bool = fn in BOOL_RESULT or (fn in ("where",) and bools[1] and bools[2])
        return self.emit("pw", fn, tuple(refs), dims, is_bool)

    # ---- graph walk -----------------------------------------------------------------------
    def run(self) -> None:
        graph = self.traced.graph.graph
        live = _live_nodes(graph)
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        for node, info in zip(placeholders, self.traced.args, strict=True):
            if info.kind == "float":
                self.env[node.name] = self.emit("arg", "", (info.name,), None)
                self.args.append((info, ()))
                continue
            axes = tuple(
                None if s == 1 else self.ax.new(s, (info.name, d))
                for d, s in enumerate(self.traced.shapes[node.name])
            )
            self.args.append((info, axes))
            if node in live:
                dims = tuple(() if a is None else (a,) for a in axes)
                self.env[node.name] = self.emit("load", "", (info.name,), dims, info.dtype == "bool")
        for node in graph.nodes:
            if node.op != "call_function" or node not in live:
                continue
            self.call(node)
        out = next(n for n in graph.nodes if n.op == "output")
        result = out.args[0]
        if isinstance(result, (list, tuple)):
            if len(result) != 1:
                raise LoweringError(f"forward returns {len(result)} values; only one output is supported")
            result = result[0]
        self.output = self.env.get(result.name) if hasattr(result, "name") else None
        if not isinstance(self.output, Value) or self.output.dims is None:
            raise LoweringError("forward does not return a tensor computed by the graph")
        self.output_dtype = self.traced.dtypes.get(result.name, "float32")

    def call(self, node: Any) -> None:
        target = node.target
        if target is operator.getitem:
            tup, idx = node.args
            value = self.env[tup.name]
            if not isinstance(value, tuple) or value[idx] is None:
                raise LoweringError(f"{tup.name}[{idx}] (reduction indices) is used")
            self.env[node.name] = value[idx]
            return
        if not hasattr(target, "_schema"):
            self.env[node.name] = self.host(node)
            return
        name = target.overloadpacket.__name__
        if name == "sym_size":
            self.env[node.name] = self.host(node)
            return
        if target._schema.is_mutable:
            raise LoweringError(f"{target} mutates its inputs")
        a = _bind(node)
        shape = self.traced.shapes.get(node.name, ())
        from kernelevolve.variation.codegen.lower_ops import HANDLERS

        if name in HANDLERS:
            self.env[node.name] = HANDLERS[name](self, a, shape)
        elif name in IDENTITY:
            self.env[node.name] = self.tensor(node.args[0])
        elif name in UNARY and len(node.args) == 1 and not node.kwargs:
            self.env[node.name] = self.pointwise(RENAME.get(name, name), [a["self"]])
        elif name in BINARY:
            self.env[node.name] = self.binary(name, a)
        else:
            raise LoweringError(f"unsupported op {target}")

    def binary(self, name: str, a: dict[str, Any]) -> Value:
        lhs = a.get("self", a.get("input"))
        rhs = a.get("other", a.get("exponent"))
        alpha = a.get("alpha", 1)
        if name == "rsub":
            lhs, rhs, name = rhs, lhs, "sub"
            if alpha != 1:
                return self.pointwise_chain("sub", lhs, self.pointwise("mul", [rhs, alpha]))
            return self.pointwise("sub", [lhs, rhs])
        if name in ("add", "sub") and alpha != 1:
            return self.pointwise_chain(name, lhs, self.pointwise("mul", [rhs, alpha]))
        if name == "div" and a.get("rounding_mode") is not None:
            q = self.pointwise("div", [lhs, rhs])
            return self.unary_on(q, "trunc" if a["rounding_mode"] == "trunc" else "floor")
        return self.pointwise(RENAME.get(name, name), [lhs, rhs])

    def pointwise_chain(self, fn: str, lhs: Any, rhs_val: Value) -> Value:
        ref, dims, b = self.operand(lhs)
        out_dims = self.broadcast([dims, rhs_val.dims or ()])
        return self.emit("pw", fn, (ref, rhs_val.name), out_dims)

    def unary_on(self, v: Value, fn: str, is_bool: bool = False) -> Value:
        return self.emit("pw", fn, (v.name,), v.dims, is_bool)

    # ---- host scalars (sizes) ---------------------------------------------------------------
    def host(self, node: Any) -> Value:
        target = node.target
        if (
            getattr(target, "overloadpacket", None) is not None
            and target.overloadpacket.__name__ == "sym_size"
        ):
            src, dim = node.args
            info = self.arg_of(src)
            expr = f"{info.name}.shape[{dim}]"
        elif target in HOST_BINARY:
            lhs, rhs = (self.host_expr(x) for x in node.args)
            expr = f"({lhs} {HOST_BINARY[target]} {rhs})"
        elif target is operator.neg:
            expr = f"(-{self.host_expr(node.args[0])})"
        elif getattr(target, "__name__", "") in ("sym_float", "sym_int", "_sym_sqrt", "sqrt"):
            conv = {"sym_float": "float", "sym_int": "int"}.get(target.__name__, "math.sqrt")
            expr = f"{conv}({self.host_expr(node.args[0])})"
        else:
            raise LoweringError(f"unsupported op {target}")
        return self.new_host(expr)

    def new_host(self, expr: Any) -> Value:
        hname = f"h{len(self.hosts)}"
        self.hosts.append((hname, expr))
        return self.emit("host", "", (hname,), None)

    def host_expr(self, x: Any) -> str:
        import torch

        if isinstance(x, torch.fx.Node):
            v = self.env.get(x.name)
            op = next((o for o in self.ops if isinstance(v, Value) and o["name"] == v.name), None)
            if op is None or op["kind"] != "host":
                raise LoweringError("a size is computed from tensor data")
            return str(dict(self.hosts)[str(op["args"][0])])  # inline: hosts are bound once, in forward
        if isinstance(x, (int, float)):
            return repr(x)
        raise LoweringError(f"unsupported size operand {x!r}")

    def arg_of(self, node: Any) -> Any:
        if node.op != "placeholder":
            raise LoweringError("size read from an intermediate tensor")
        placeholders = [n for n in self.traced.graph.graph.nodes if n.op == "placeholder"]
        return self.traced.args[placeholders.index(node)]

    # ---- shape ops --------------------------------------------------------------------------
    def tensor(self, x: Any) -> Value:
        v = self.env.get(x.name)
        if not isinstance(v, Value) or v.dims is None:
            raise LoweringError(f"{x.name} is not a tensor value")
        return v

    def reshaped(self, v: Value, dims: Dims) -> Value:
        return Value(v.name, dims, v.is_bool)


def lower(traced: TracedProgram) -> FusedProgram:
    from kernelevolve.variation.codegen.finish import finish

    lw = Lowerer(traced)
    lw.run()
    return finish(lw)
