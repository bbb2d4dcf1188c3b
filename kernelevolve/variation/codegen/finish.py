"""Resolve the lowered graph's axes and decide which pattern (if any) it is."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelevolve.variation.codegen.ir import Arg, Axis, FusedProgram, Host, Op
from kernelevolve.variation.codegen.lower import LoweringError

if TYPE_CHECKING:
    from kernelevolve.variation.codegen.lower import Lowerer


def _flat(dims: tuple[tuple[int, ...], ...] | None) -> list[int]:
    return [a for run in dims or () for a in run]


def finish(lw: Lowerer) -> FusedProgram:
    find = lw.ax.find
    output = lw.output
    assert output is not None

    # Keep only ops the output depends on.
    by_name = {op["name"]: op for op in lw.ops}
    needed: set[str] = set()
    stack = [output.name]
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        stack.extend(a for a in by_name[name]["args"] if isinstance(a, str) and a in by_name)
    raw = [op for op in lw.ops if op["name"] in needed]

    args: list[Arg] = []
    for info, arg_axes in lw.args:
        resolved = tuple(None if a is None else find(a) for a in arg_axes)
        present = [a for a in resolved if a is not None]
        if len(present) != len(set(present)):
            raise LoweringError(
                f"{info.name} is read with two of its dimensions on one axis (a transpose of itself)"
            )
        args.append(Arg(info.name, info.source, info.kind, resolved, info.dtype))
    used_args = {op["args"][0] for op in raw if op["kind"] in ("load", "arg")}
    if not any(arg.kind == "tensor" and arg.name in used_args for arg in args):
        raise LoweringError("no tensor input is read")

    op_axes = {op["name"]: frozenset(find(a) for a in _flat(op["dims"])) for op in raw}
    out_dims = tuple(tuple(find(a) for a in run) for run in output.dims or ())
    out_axes = [a for run in out_dims for a in run]
    all_axes = set().union(*op_axes.values(), out_axes)
    for a in all_axes:
        if a not in lw.ax.source:
            raise LoweringError("a broadcast size does not come from any input dimension")
    axes = {a: Axis(a, lw.ax.source[a][0], lw.ax.source[a][1], lw.ax.size[a]) for a in sorted(all_axes)}

    live_reductions = [op for op in raw if op["kind"] == "reduce"]
    reduce_sets = {frozenset(find(a) for a in op["red_axes"]) for op in live_reductions}
    if live_reductions and len(reduce_sets) > 1:
        raise LoweringError("reductions over different axes")
    if not live_reductions:
        pattern = "pointwise"
        order = tuple(out_axes)
        reduce_axes: tuple[int, ...] = ()
    else:
        main = max(live_reductions, key=lambda op: len(_flat(op["in_dims"])))["in_dims"]
        order = tuple(find(a) for a in _flat(main))
        if len(set(order)) != len(order):
            raise LoweringError("the reduced tensor reads one axis twice")
        (red,) = reduce_sets
        reduce_axes = tuple(a for a in order if a in red)
        first = order.index(reduce_axes[0])
        if order[first : first + len(reduce_axes)] != reduce_axes:
            raise LoweringError("reduction axes are not adjacent in memory (e.g. batch norm over N, H, W)")
        pattern = "full_reduction" if len(reduce_axes) == len(order) else "row_reduction"
    if len(set(out_axes)) != len(out_axes):
        raise LoweringError("the output repeats an axis")
    if not all_axes <= set(order):
        raise LoweringError("a value varies over an axis the iteration space does not have")
    if pattern != "pointwise" and set(out_axes) not in (set(order), set(order) - set(reduce_axes)):
        raise LoweringError("the output covers neither the full nor the reduced iteration space")
    if lw.output_dtype != "bool" and lw.output_dtype not in ("float32", "float64", "float16", "bfloat16"):
        raise LoweringError(f"output dtype {lw.output_dtype} (only floating and bool outputs)")

    hosts: list[Host] = []
    used_hosts = {op["args"][0] for op in raw if op["kind"] == "host"}
    for hname, expr in lw.hosts:
        if hname not in used_hosts:
            continue
        if isinstance(expr, tuple):
            expr = "float(" + " * ".join(f"_S{find(a)}" for a in expr[1]) + ")"
        else:
            expr = f"float({expr})"
        hosts.append(Host(hname, expr))

    levels: dict[str, int] = {}
    ops: list[Op] = []
    red_set = set(reduce_axes)
    for op in raw:
        deps = [levels[a] for a in op["args"] if isinstance(a, str) and a in levels]
        level = max(deps, default=0)
        if op["kind"] == "reduce":
            if not (op_axes[op["args"][0]] & red_set):
                raise LoweringError("reduction of a value that is constant along the reduced axes")
            level += 1
        levels[op["name"]] = level
        ops.append(
            Op(op["name"], op["kind"], op["fn"], op["args"], op_axes[op["name"]], level, op["is_bool"])
        )

    return FusedProgram(
        pattern=pattern,
        order=order,
        axes=axes,
        reduce_axes=reduce_axes,
        args=tuple(args),
        hosts=tuple(hosts),
        ops=tuple(ops),
        output=output.name,
        output_dims=out_dims,
        output_bool=lw.output_dtype == "bool",
        forward_params=lw.traced.forward_params,
        symbolic=lw.traced.symbolic,
    )
