"""Lowering rules for aten ops with their own argument shapes: views, constants, casts, reductions.

Each rule takes the lowerer, the op's arguments bound by schema name and the op's concrete output
shape at the traced size, and returns the IR value (or a tuple of them for max.dim/min.dim).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelevolve.variation.codegen.lower import Dims, Lowerer, LoweringError, Value

Handler = Callable[[Lowerer, dict[str, Any], tuple[int, ...]], Any]
HANDLERS: dict[str, Handler] = {}


def handler(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = fn
        return fn

    return register


@handler("view", "_unsafe_view", "reshape", "view_copy")
def _view(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    v = lw.tensor(a["self"])
    seq = [ax for run in v.dims or () for ax in run]
    out: list[tuple[int, ...]] = []
    k = 0
    for size in shape:
        if size == 1:
            out.append(())
            continue
        run: list[int] = []
        prod = 1
        while prod < size and k < len(seq):
            run.append(seq[k])
            prod *= lw.ax.size[lw.ax.find(seq[k])]
            k += 1
        if prod != size:
            raise LoweringError("view splits a dimension")
        out.append(tuple(run))
    if k != len(seq):
        raise LoweringError("view drops a dimension")
    return lw.reshaped(v, tuple(out))


@handler("unsqueeze")
def _unsqueeze(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    v = lw.tensor(a["self"])
    dims = list(v.dims or ())
    d = a["dim"] % (len(dims) + 1)
    dims.insert(d, ())
    return lw.reshaped(v, tuple(dims))


@handler("squeeze")
def _squeeze(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    v = lw.tensor(a["self"])
    dims = list(v.dims or ())
    which = a.get("dim")
    if which is None:
        which = list(range(len(dims)))
    elif isinstance(which, int):
        which = [which]
    drop = {d % len(dims) for d in which} if dims else set()
    return lw.reshaped(v, tuple(run for i, run in enumerate(dims) if not (i in drop and not run)))


@handler("expand")
def _expand(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    v = lw.tensor(a["self"])
    dims = v.dims or ()
    out: list[tuple[int, ...]] = []
    for pos, size in enumerate(shape):
        i = pos - (len(shape) - len(dims))
        if i >= 0 and dims[i]:
            out.append(dims[i])
        elif size == 1:
            out.append(())
        else:
            out.append((lw.ax.new(size),))
    return lw.reshaped(v, tuple(out))


@handler("permute")
def _permute(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    v = lw.tensor(a["self"])
    dims = v.dims or ()
    return lw.reshaped(v, tuple(dims[d % len(dims)] for d in a["dims"]))


@handler("transpose")
def _transpose(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    v = lw.tensor(a["self"])
    dims = list(v.dims or ())
    i, j = a["dim0"] % len(dims), a["dim1"] % len(dims)
    dims[i], dims[j] = dims[j], dims[i]
    return lw.reshaped(v, tuple(dims))


@handler("t")
def _t(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    v = lw.tensor(a["self"])
    return lw.reshaped(v, tuple(reversed(v.dims or ())))


# ---- constants and casts ----------------------------------------------------------------
def _constant(lw: Lowerer, value: Any, shape: tuple[int, ...], like: Dims | None = None) -> Value:
    if isinstance(value, bool):
        is_bool = True
    elif isinstance(value, (int, float)):
        is_bool = False
    else:
        raise LoweringError(f"non-literal fill value {value!r}")
    dims = like if like is not None else tuple(() if s == 1 else (lw.ax.new(s),) for s in shape)
    return lw.emit("const", "", (value,), dims, is_bool)


@handler("scalar_tensor")
def _scalar_tensor(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return _constant(lw, a["s"], ())


@handler("full")
def _full(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return _constant(lw, a["fill_value"], shape)


@handler("full_like")
def _full_like(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return _constant(lw, a["fill_value"], shape, lw.tensor(a["self"]).dims)


@handler("zeros_like")
def _zeros_like(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return _constant(lw, 0.0, shape, lw.tensor(a["self"]).dims)


@handler("ones_like")
def _ones_like(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return _constant(lw, 1.0, shape, lw.tensor(a["self"]).dims)


@handler("_to_copy", "to", "convert_element_type")
def __to_copy(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    v = lw.tensor(a["self"])
    dtype = str(a.get("dtype")).removeprefix("torch.")
    if a.get("dtype") is None or dtype in ("float32", "float64"):
        return lw.unary_on(v, "to_float") if v.is_bool else v
    if dtype == "bool":
        return lw.unary_on(v, "to_bool", True)
    if dtype in ("float16", "bfloat16"):
        return lw.unary_on(v, f"round_{dtype}")
    if dtype.startswith(("int", "uint")):
        return lw.unary_on(v, "trunc")
    raise LoweringError(f"cast to {dtype}")


# ---- pointwise ops with their own argument shapes ----------------------------------------
@handler("where")
def _where(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return lw.pointwise("where", [a["condition"], a["self"], a["other"]])


@handler("masked_fill")
def _masked_fill(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return lw.pointwise("where", [a["mask"], a["value"], a["self"]])


@handler("clamp")
def _clamp(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    v = lw.pointwise("copy", [a["self"]]) if a.get("min") is None and a.get("max") is None else None
    if v is not None:
        return v
    cur: Any = a["self"]
    val: Value | None = None
    for bound, fn in ((a.get("min"), "maximum"), (a.get("max"), "minimum")):
        if bound is None:
            continue
        if val is None:
            val = lw.pointwise(fn, [cur, bound])
        else:
            ref, dims, _ = lw.operand(bound)
            val = lw.emit("pw", fn, (val.name, ref), lw.broadcast([val.dims or (), dims]))
    assert val is not None
    return val


@handler("pow")
def _pow(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return lw.pointwise("pow", [a["self"], a["exponent"]])


@handler("relu")
def _relu(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return lw.pointwise("maximum", [a["self"], 0.0])


# ---- reductions ----------------------------------------------------------------------------
def _reduce(lw: Lowerer, kind: str, x: Any, dim: Any, keepdim: bool, mean: bool = False) -> Value:
    v = lw.tensor(x)
    dims = v.dims or ()
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        which = set(range(len(dims)))
    elif isinstance(dim, int):
        which = {dim % len(dims)} if dims else set()
    else:
        which = {d % len(dims) for d in dim}
    axes = [ax for i in sorted(which) for ax in dims[i]]
    out_dims = tuple(() if i in which else run for i, run in enumerate(dims) if keepdim or i not in which)
    if not axes:  # reducing size-1 dimensions only
        return lw.reshaped(v, out_dims)
    red = lw.emit("reduce", kind, (v.name,), out_dims)
    lw.ops[-1]["red_axes"] = axes
    lw.ops[-1]["in_dims"] = dims
    if not mean:
        return red
    count = lw.new_host(("count", axes))
    return lw.emit("pw", "div", (red.name, count.name), out_dims)


@handler("sum")
def _sum(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return _reduce(lw, "sum", a["self"], a.get("dim"), a.get("keepdim", False))


@handler("mean")
def _mean(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return _reduce(lw, "sum", a["self"], a.get("dim"), a.get("keepdim", False), mean=True)


@handler("amax")
def _amax(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return _reduce(lw, "max", a["self"], a.get("dim"), a.get("keepdim", False))


@handler("amin")
def _amin(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Value:
    return _reduce(lw, "min", a["self"], a.get("dim"), a.get("keepdim", False))


@handler("max")
def _max(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Any:
    if "other" in a:
        return lw.pointwise("maximum", [a["self"], a["other"]])
    if "dim" not in a:
        return _reduce(lw, "max", a["self"], None, False)
    return (_reduce(lw, "max", a["self"], a["dim"], a.get("keepdim", False)), None)


@handler("min")
def _min(lw: Lowerer, a: dict[str, Any], shape: tuple[int, ...]) -> Any:
    if "other" in a:
        return lw.pointwise("minimum", [a["self"], a["other"]])
    if "dim" not in a:
        return _reduce(lw, "min", a["self"], None, False)
    return (_reduce(lw, "min", a["self"], a["dim"], a.get("keepdim", False)), None)
