"""A sum or mean over all spatial dimensions of a convolution's output, without the convolution.

Every output position of a convolution reads the input through the same weights, so summing the
output over its positions sums, for each kernel tap, the input positions that tap ever meets:
`sum_p conv(x, W)[o, p] = sum_{c, k} W[o, c, k] * Z[c, k] + |P| * bias[o]`, with
`Z[c, k] = sum_i x[c, i] * M[i, k]` and `M[i, k] = 1` where tap `k` of some output position reads
input position `i` (per spatial dimension: a band set by stride, padding and dilation; for a
transposed convolution, input `i` and tap `k` write output `i * stride + k * dilation - padding`,
kept where it lands inside the output). The convolution's work becomes one pass over the input and
a (batch, out) x (in * taps) product (KernelBench level 2: ConvTranspose2d_GlobalAvgPool_BiasAdd_...,
ConvTranspose2d_Multiply_GlobalAvgPool_..., ConvTranspose3d_Scale_BatchNorm_GlobalAvgPool). Where the
channels are summed too, a per-channel factor (batch norm) goes into the weights. Plain and
transposed convolutions of 1-3 dimensions, zero padding, one group.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
import torch.fx as fx

from kernelevolve.variation.rewrite.affine import Producer, fold_first
from kernelevolve.variation.rewrite.builder import Builder, Operand
from kernelevolve.variation.rewrite.nodes import module_of, shape

_CONVOLUTIONS = (
    torch.nn.Conv1d,
    torch.nn.Conv2d,
    torch.nn.Conv3d,
    torch.nn.ConvTranspose1d,
    torch.nn.ConvTranspose2d,
    torch.nn.ConvTranspose3d,
)


def apply(gm: fx.GraphModule) -> str | None:
    """Fold the first foldable spatial reduction in the graph; its description, or None."""
    return fold_first(gm, producer_at, "window sums of its input")


def producer_at(gm: fx.GraphModule, node: fx.Node) -> Producer | None:
    """`node` as a convolution module call the fold handles, or None."""
    module = module_of(gm, node)
    if not isinstance(module, _CONVOLUTIONS) or len(node.args) != 1 or node.kwargs:
        return None
    x = node.args[0]
    in_shape, out_shape = shape(x), shape(node)
    n = len(module.kernel_size)
    if in_shape is None or out_shape is None or len(in_shape) != n + 2 or len(out_shape) != n + 2:
        return None
    if module.groups != 1 or module.padding_mode != "zeros":
        return None
    padding = _left_padding(module)
    if padding is None:
        return None
    assert isinstance(x, fx.Node)
    target = str(node.target)

    def conv_fold(b: Builder, vector: Operand | None) -> fx.Node:
        """Summed over the positions; `vector`: a per-channel factor, folded into weight and bias."""
        device, dtype = b.call(getattr, x, "device"), b.call(getattr, x, "dtype")
        z = x
        # contract input positions with the tap masks one dimension at a time, the innermost first:
        # it reads the input along rows, and each later pass reads a tensor smaller by In / taps
        for i in reversed(range(n)):
            taps = module.kernel_size[i]
            mask = _mask(b, device, dtype, in_shape[2 + i], taps, out_shape[2 + i], module, padding[i], i)
            mask = b.method("reshape", mask, (in_shape[2 + i], taps, *([1] * (n - 1 - i))))
            z = b.method("sum", b.call(operator.mul, b.method("unsqueeze", z, 3 + i), mask), 2 + i)
        weight = b.attr(f"{target}.weight")
        if module.transposed:
            weight = b.method("transpose", weight, 0, 1)
        if vector is not None:
            weight = b.call(operator.mul, weight, b.method("reshape", vector, (-1, *([1] * (n + 1)))))
        summed = b.method(
            "sum", b.call(operator.mul, b.method("unsqueeze", z, 1), weight), list(range(2, n + 3))
        )
        if module.bias is not None:
            bias = b.mul(b.attr(f"{target}.bias"), vector)
            summed = b.call(operator.add, summed, b.mul(bias, math.prod(out_shape[2:])))
        return b.method("reshape", summed, (out_shape[0], out_shape[1], *([1] * n)))

    spatial = tuple(range(2, n + 2))
    return Producer(node, spatial, 1, None, (), conv_fold, f"{target} ({type(module).__name__})")


def _left_padding(module: Any) -> tuple[int, ...] | None:
    """Zeros before the first input position, per dimension ("same" pads the odd one after)."""
    padding, kernel, dilation = module.padding, module.kernel_size, module.dilation
    if padding == "valid":
        return tuple(0 for _ in kernel)
    if padding == "same":
        return tuple(d * (k - 1) // 2 for d, k in zip(dilation, kernel, strict=True))
    if isinstance(padding, tuple) and all(isinstance(p, int) for p in padding):
        return padding
    return None


def _mask(
    b: Builder,
    device: fx.Node,
    dtype: fx.Node,
    inputs: int,
    taps: int,
    outputs: int,
    module: Any,
    padding: int,
    dim: int,
) -> fx.Node:
    """(inputs, taps): 1 where tap k of the kernel meets input position i at some output position."""
    stride, dilation = module.stride[dim], module.dilation[dim]
    i = b.method("unsqueeze", b.call(torch.arange, inputs, device=device), 1)
    k = b.call(torch.arange, taps, device=device)
    tap_offset = b.call(operator.mul, k, dilation) if dilation != 1 else k
    if module.transposed:  # input i, tap k write output i * stride + k * dilation - padding
        position = b.call(operator.sub, b.call(operator.add, _times(b, i, stride), tap_offset), padding)
        valid = b.call(
            operator.and_, b.call(operator.ge, position, 0), b.call(operator.lt, position, outputs)
        )
    else:  # output o, tap k read input o * stride + k * dilation - padding
        offset = b.call(operator.sub, b.call(operator.add, i, padding), tap_offset)
        valid = b.call(
            operator.and_, b.call(operator.ge, offset, 0), b.call(operator.lt, offset, outputs * stride)
        )
        if stride != 1:
            aligned = b.call(operator.eq, b.call(operator.mod, offset, stride), 0)
            valid = b.call(operator.and_, valid, aligned)
    return b.method("to", valid, dtype)


def _times(b: Builder, value: fx.Node, factor: int) -> fx.Node:
    return b.call(operator.mul, value, factor) if factor != 1 else value
