"""A sum or mean over a GEMM's output features, folded into a matrix-vector product.

`sum_j (x W^T + b)_j * s_j = x @ (s W) + b . s`: the (M, N, K) GEMM becomes an (N, K) weight
reduction and an (M, K) matrix-vector product, both Triton reductions once Inductor compiles them
(KernelBench level 2: Gemm_Divide_Sum_Scaling, Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp,
Gemm_Subtract_GlobalAvgPool_...). Layers: nn.Linear,
F.linear, and matmul / mm / bmm / addmm with any right-hand operand (`sum_j (A B)_ij = A @ B.sum(-1)`).
A reduction that does not include the output features (over the batch) is left alone.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx as fx

from kernelevolve.variation.rewrite.affine import Producer, fold_first
from kernelevolve.variation.rewrite.builder import Builder, Operand
from kernelevolve.variation.rewrite.nodes import arguments, module_of, op_name, shape


def apply(gm: fx.GraphModule) -> str | None:
    """Fold the first foldable reduction in the graph; its description, or None where none is."""
    return fold_first(gm, producer_at, "a matrix-vector product")


def producer_at(gm: fx.GraphModule, node: fx.Node) -> Producer | None:
    """`node` as a GEMM whose output features are its last dimension, or None."""
    out_shape = shape(node)
    if out_shape is None or not out_shape:
        return None
    last = len(out_shape) - 1
    module = module_of(gm, node)
    if isinstance(module, torch.nn.Linear):
        return _linear_module(node, module, out_shape)
    name = op_name(node)
    bound = arguments(node) if name in ("linear", "matmul", "addmm") else None
    if bound is None:
        return None
    if name == "linear":
        return _functional_linear(node, bound, last)
    bias = bound.get("input") if name == "addmm" else None
    a, operand = (
        (bound.get("mat1"), bound.get("mat2"))
        if name == "addmm"
        else (bound.get("input"), bound.get("other"))
    )
    a_shape, b_shape = shape(a), shape(operand)
    if a_shape is None or b_shape is None or len(a_shape) < 2 or len(b_shape) < 2:
        return None
    if name == "addmm" and (not isinstance(bias, fx.Node) or shape(bias) is None):
        return None
    assert isinstance(a, fx.Node) and isinstance(operand, fx.Node)
    return Producer(
        node, (last,), last, bias, shape(bias) or (), lambda b, v: _columns_fold(b, a, operand, v), str(name)
    )


def _linear_module(node: fx.Node, module: torch.nn.Linear, out_shape: tuple[int, ...]) -> Producer | None:
    if len(node.args) != 1 or node.kwargs or not isinstance(node.args[0], fx.Node):
        return None
    target, x, last = str(node.target), node.args[0], len(out_shape) - 1
    has_bias = module.bias is not None
    return Producer(
        node,
        (last,),
        last,
        f"{target}.bias" if has_bias else None,
        (out_shape[-1],) if has_bias else (),
        lambda b, v: _rows_fold(b, x, b.attr(f"{target}.weight"), v),
        f"{target} (nn.Linear)",
    )


def _functional_linear(node: fx.Node, bound: dict[str, Any], last: int) -> Producer | None:
    x, weight, bias = bound.get("input"), bound.get("weight"), bound.get("bias")
    if not isinstance(x, fx.Node) or not isinstance(weight, fx.Node) or shape(weight) is None:
        return None
    if bias is not None and (not isinstance(bias, fx.Node) or shape(bias) is None):
        return None
    return Producer(
        node, (last,), last, bias, shape(bias) or (), lambda b, v: _rows_fold(b, x, weight, v), "F.linear"
    )


def _rows_fold(b: Builder, x: fx.Node, weight: fx.Node, vector: Operand | None) -> fx.Node:
    """sum_j (x W^T)_j s_j, keeping the feature dimension: x . (s W), W stored (N, K) as nn.Linear's.

    Written as multiply-and-sum, not matmul: Inductor makes those Triton reductions, where a
    matrix-vector matmul may become a library call that strict mode rejects."""
    scaled = weight if vector is None else b.call(operator.mul, weight, b.method("unsqueeze", vector, -1))
    column = b.method("sum", scaled, 0)
    return b.method("sum", b.call(operator.mul, x, column), -1, keepdim=True)


def _columns_fold(b: Builder, a: fx.Node, operand: fx.Node, vector: Operand | None) -> fx.Node:
    """sum_j (A B)_ij s_j, keeping the last dimension: A . (B s), B stored (..., K, N)."""
    scaled = operand if vector is None else b.call(operator.mul, operand, vector)
    row = b.method("unsqueeze", b.method("sum", scaled, -1), -2)  # (..., 1, K)
    return b.method("sum", b.call(operator.mul, a, row), -1, keepdim=True)
