"""Rewrites that remove an op outright: reductions over size-1 dimensions, and `a - a`.

A sum, mean, max, min, amax, amin, prod or logsumexp over dimensions that all have size 1 is its
input (squeezed unless keepdim): KernelBench chains them after a keepdim reduction
(Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp). Exact: logsumexp of one value is that value.
`a - a` is zero for every finite `a`, so the computation of `a` drops out (Gemm_Max_Subtract_GELU
subtracts the mean over a size-1 dimension, i.e. the value itself). It presumes finite values: where
`a` holds an inf or a NaN the original gives NaN; the harness's inputs and weights are finite.
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx

from kernelevolve.variation.rewrite.nodes import arguments, dims, op_name, shape

_SINGLETON_OPS = ("sum", "mean", "amax", "amin", "prod", "logsumexp", "max", "min")


def apply_singleton(gm: fx.GraphModule) -> str | None:
    """Replace the first reduction over size-1 dimensions by its input; its description or None."""
    for node in gm.graph.nodes:
        name = op_name(node)
        bound = arguments(node) if name in _SINGLETON_OPS else None
        if bound is None or not isinstance(bound.get("input"), fx.Node):
            continue
        source = bound["input"]
        in_shape, keepdim = shape(source), bound.get("keepdim", False)
        if in_shape is None or not isinstance(keepdim, bool) or isinstance(bound.get("dim"), fx.Node):
            continue
        if not source.meta["tensor_meta"].dtype.is_floating_point:  # an integer sum widens to int64
            continue
        users = [node]
        if name in ("max", "min") and "dim" in bound:  # (values, indices): only values may be read
            users = list(node.users)
            if not users or not all(_is_values(u) for u in users):
                continue
        reduced = dims(bound.get("dim"), len(in_shape))
        if not reduced or any(in_shape[d] != 1 for d in reduced):
            continue
        with gm.graph.inserting_before(node):
            value = source if keepdim else gm.graph.call_function(torch.squeeze, (source, reduced))
        for user in users:
            user.replace_all_uses_with(value)
        return (
            f"{name} over size-1 dim{'s' if len(reduced) > 1 else ''} {', '.join(map(str, reduced))} removed"
        )
    return None


def _is_values(user: fx.Node) -> bool:
    return user.op == "call_function" and (
        (user.target is operator.getitem and user.args[1:] == (0,))
        or (user.target is getattr and user.args[1:] == ("values",))
    )


def apply_self_difference(gm: fx.GraphModule) -> str | None:
    """Replace the first `a - a` by zeros shaped like `a`; its description or None."""
    for node in gm.graph.nodes:
        if op_name(node) != "sub":
            continue
        bound = arguments(node)
        if bound is None or len(bound) != 2 or bound.get("input") is not bound.get("other"):
            continue
        source = bound["input"]
        if not isinstance(source, fx.Node) or shape(source) is None or shape(node) != shape(source):
            continue
        node.replace_all_uses_with(_zeros(gm, node, source))
        return f"{source.name} - {source.name} replaced by zeros (finite values)"
    return None


def _zeros(gm: fx.GraphModule, anchor: fx.Node, like: fx.Node) -> fx.Node:
    """Zeros of `like`'s shape that do not read `like` (so what computes it is dead): `new_zeros` of
    the first tensor input (its device, and its dtype where `like` had that dtype when traced), which
    keeps that input an input of the compiled graph (the compiler seeds need one)."""
    first = next((n for n in gm.graph.nodes if n.op == "placeholder" and "tensor_meta" in n.meta), None)
    with gm.graph.inserting_before(anchor):
        if first is None:
            return gm.graph.call_function(torch.zeros_like, (like,))
        traced = like.meta["tensor_meta"].dtype
        kwargs = {} if traced == first.meta["tensor_meta"].dtype else {"dtype": traced}
        return gm.graph.call_method("new_zeros", (first, shape(like)), kwargs)
