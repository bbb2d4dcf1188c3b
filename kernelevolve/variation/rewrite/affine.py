"""A sum or mean of a linear layer's output, seen through the affine steps between them, and its fold.

The pattern every fold rule shares: `reduce_D(y * s + c)` where `y = L(x)` is linear in `x` (a GEMM,
a convolution), `s` a product of factors and `c` a sum of terms that do not depend on `y`. Then
`reduce_D(y * s + c) = s_outer * reduce_D(y * s_feature) + reduce_D(c)`, where `s_outer` is constant
along the reduced dimensions (a scalar, a per-row scale) and `s_feature` varies along the layer's
output features only, so it can be folded into the layer's weights. Each rule supplies a `Producer`:
how to compute `reduce(y * s_feature)` over the dimensions the layer's structure lets it collapse,
which is where the work goes away. The remaining reduced dimensions are summed after the fold.

Steps allowed between the layer and the reduction: `+ t`, `- t`, `t - y`, `* t`, `/ t`, `-y`,
identities (dropout in eval, clone, detach, contiguous, nn.Identity) and eval-mode batch norm (a
per-channel scale and shift). Each intermediate value must feed only the next step: a value used
elsewhere would have to be computed anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.fx as fx

from kernelevolve.variation.rewrite.builder import Builder, Operand, count
from kernelevolve.variation.rewrite.nodes import (
    aligned,
    arguments,
    broadcasts_into,
    depends_on,
    dims,
    module_of,
    op_name,
    shape,
)

_IDENTITY_MODULES = (
    torch.nn.Dropout,
    torch.nn.Dropout1d,
    torch.nn.Dropout2d,
    torch.nn.Dropout3d,
    torch.nn.Identity,
)
_ADAPTIVE_AVG = (torch.nn.AdaptiveAvgPool1d, torch.nn.AdaptiveAvgPool2d, torch.nn.AdaptiveAvgPool3d)


@dataclass(frozen=True)
class Reduction:
    node: fx.Node
    input: fx.Node
    dims: tuple[int, ...]  # non-negative, sorted
    keepdim: bool
    mean: bool

    def describe(self) -> str:
        kind = "mean" if self.mean else "sum"
        return f"{kind} over dim{'s' if len(self.dims) > 1 else ''} {', '.join(map(str, self.dims))}"


@dataclass(frozen=True)
class Producer:
    """A layer whose output is linear in its input, and how to reduce that output cheaply."""

    node: fx.Node  # the layer's output y
    collapsed: tuple[int, ...]  # dimensions `fold` reduces (keeping them, size 1)
    feature_dim: int | None  # where a factor may vary and be folded into the weights; None: nowhere
    bias: fx.Node | str | None  # a term inside y (a layer's bias: a node, or a parameter's path)
    bias_shape: tuple[int, ...]
    fold: Callable[[Builder, Operand | None], fx.Node]  # (builder, feature factor as a vector or None)
    name: str  # for the description: "gemm (nn.Linear)"


@dataclass(frozen=True)
class Step:
    node: fx.Node
    kind: str  # add, sub, rsub, mul, div, neg, identity, batchnorm
    other: Operand | None  # the operand that is not the chain's value
    module: torch.nn.Module | None = None  # batch norm


def reduction_at(gm: fx.GraphModule, node: fx.Node) -> Reduction | None:
    """`node` as a sum or mean with literal dimensions (AdaptiveAvgPool to size 1 counts), else None."""
    module = module_of(gm, node)
    if isinstance(module, _ADAPTIVE_AVG):
        size = module.output_size
        sizes = size if isinstance(size, tuple) else (size,)
        in_shape = shape(node.args[0]) if len(node.args) == 1 and not node.kwargs else None
        n = _ADAPTIVE_AVG.index(type(module)) + 1  # spatial dimensions
        if in_shape is None or any(s != 1 for s in sizes) or len(in_shape) < n + 1:
            return None
        spatial = tuple(range(len(in_shape) - n, len(in_shape)))
        return Reduction(node, node.args[0], spatial, True, True)  # type: ignore[arg-type]
    if op_name(node) not in ("sum", "mean"):
        return None
    bound = arguments(node)
    if bound is None or not isinstance(bound.get("input"), fx.Node):
        return None
    in_shape = shape(bound["input"])
    keepdim = bound.get("keepdim", False)
    if in_shape is None or not isinstance(keepdim, bool):
        return None
    reduced = dims(bound.get("dim"), len(in_shape))
    if reduced is None:
        return None
    return Reduction(node, bound["input"], reduced, keepdim, op_name(node) == "mean")


def step_at(gm: fx.GraphModule, node: fx.Node, chain: fx.Node) -> Step | None:
    """`node` as an affine step of `chain`'s value, or None."""
    module = module_of(gm, node)
    if module is not None:
        if len(node.args) != 1 or node.kwargs or node.args[0] is not chain:
            return None
        if isinstance(module, _IDENTITY_MODULES):
            return Step(node, "identity", None)
        if _is_eval_batchnorm(module):
            return Step(node, "batchnorm", None, module)
        return None
    name = op_name(node)
    bound = arguments(node)
    if name is None or bound is None:
        return None
    first, second = bound.get("input"), bound.get("other")
    if name in ("clone", "detach", "contiguous") and first is chain and len(bound) == 1:
        return Step(node, "identity", None)
    if name == "dropout" and first is chain and bound.get("training", True) is False:
        return Step(node, "identity", None)
    if name == "neg" and first is chain:
        return Step(node, "neg", None)
    if name not in ("add", "sub", "mul", "div") or "other" not in bound:
        return None
    if first is chain and second is not chain:
        return Step(node, name, second)
    if second is chain and first is not chain and name != "div":
        return Step(node, {"add": "add", "mul": "mul", "sub": "rsub"}[name], first)
    return None


def _is_eval_batchnorm(module: torch.nn.Module) -> bool:
    """Batch norm that normalises with its running statistics (the model runs in eval mode; in training
    mode it normalises with the batch's and updates the running ones, which no fold can express)."""
    return (
        isinstance(module, torch.nn.modules.batchnorm._BatchNorm)
        and module.running_mean is not None
        and not module.training
    )


def chain_to(
    gm: fx.GraphModule,
    reduction: Reduction,
    producer_at: Callable[[fx.GraphModule, fx.Node], Producer | None],
) -> tuple[Producer, list[Step]] | None:
    """The layer below `reduction` and the steps from it up to the reduction (in order), or None."""
    return _walk(gm, reduction.input, reduction.node, producer_at)


def _walk(
    gm: fx.GraphModule,
    node: fx.Node,
    user: fx.Node,
    producer_at: Callable[[fx.GraphModule, fx.Node], Producer | None],
) -> tuple[Producer, list[Step]] | None:
    if set(node.users) != {user}:
        return None
    producer = producer_at(gm, node)
    if producer is not None:
        return producer, []
    for operand in node.all_input_nodes:
        step = step_at(gm, node, operand)
        if step is None:
            continue
        found = _walk(gm, operand, node, producer_at)
        if found is not None and not depends_on(step.other, found[0].node):
            return found[0], [*found[1], step]
    return None


def _factor_role(
    factor_shape: tuple[int, ...] | None, y_shape: tuple[int, ...], reduced: set[int], producer: Producer
) -> str | None:
    """The factor's role: "outer" where it is constant along the reduced dimensions (applied after
    the reduction), "feature" where it varies along the layer's output features only (folded into
    its weights); None where neither."""
    if factor_shape is None or not broadcasts_into(factor_shape, y_shape):
        return None
    lined = aligned(factor_shape, len(y_shape))
    if all(lined[d] == 1 for d in reduced):
        return "outer"
    f = producer.feature_dim
    if f is not None and f in reduced and all(size == 1 for d, size in enumerate(lined) if d != f):
        return "feature"
    return None


def foldable(producer: Producer, steps: list[Step], reduction: Reduction) -> bool:
    """Whether every step keeps the affine form the fold needs (checked before anything is built)."""
    y_shape = shape(producer.node)
    if y_shape is None or not set(producer.collapsed) <= set(reduction.dims):
        return False
    reduced = set(reduction.dims)
    for step in steps:
        if shape(step.node) != y_shape:
            return False
        if (
            step.kind in ("mul", "div")
            and _factor_role(shape(step.other), y_shape, reduced, producer) is None
        ):
            return False
        if step.kind in ("add", "sub", "rsub"):
            other_shape = shape(step.other)
            if other_shape is None or not broadcasts_into(other_shape, y_shape):
                return False
        if step.kind == "batchnorm":
            assert step.module is not None
            if _factor_role(_channel_shape(step.module, len(y_shape)), y_shape, reduced, producer) is None:
                return False
    return True


def _channel_shape(module: torch.nn.Module, rank: int) -> tuple[int, ...]:
    channels = int(module.num_features)  # type: ignore[arg-type]
    return (1, channels, *([1] * (rank - 2))) if rank >= 2 else (channels,)


def fold(gm: fx.GraphModule, producer: Producer, steps: list[Step], reduction: Reduction) -> fx.Node:
    """Build `reduction`'s value without the layer's full output; call only where `foldable`."""
    b = Builder(gm, reduction.node)
    y_shape = shape(producer.node)
    assert y_shape is not None
    rank, reduced = len(y_shape), set(reduction.dims)
    outer: list[Operand] = []
    feature: list[Operand] = []
    bias = producer.bias
    addend: Operand | None = b.attr(bias) if isinstance(bias, str) else bias
    addend_shape = producer.bias_shape
    for step in steps:
        other = step.other
        if step.kind == "batchnorm":
            assert step.module is not None
            other, shift = _batchnorm_affine(b, str(step.node.target), step.module, rank)
            role = _factor_role(_channel_shape(step.module, rank), y_shape, reduced, producer)
            (outer if role == "outer" else feature).append(other)
            addend = b.add(_scaled(b, addend, other), shift)
            addend_shape = _broadcast(addend_shape, _channel_shape(step.module, rank))
        elif step.kind in ("mul", "div"):
            assert other is not None
            role = _factor_role(shape(other), y_shape, reduced, producer)
            factor = other if step.kind == "mul" else b.reciprocal(other)
            (outer if role == "outer" else feature).append(factor)
            addend = _scaled(b, addend, factor)
            if addend is not None:  # with no term yet, its shape stays () (see _broadcast)
                addend_shape = _broadcast(addend_shape, shape(other))
        elif step.kind in ("add", "sub", "rsub"):
            assert other is not None
            if step.kind == "rsub":
                outer.append(-1)
                addend = b.add(other, b.neg(addend))
            else:
                addend = b.add(addend, other if step.kind == "add" else b.neg(other))
            addend_shape = _broadcast(addend_shape, shape(other))
        elif step.kind == "neg":
            outer.append(-1)
            addend = b.neg(addend)
    scale = b.product(feature)  # nodes only: a number is constant along every dimension ("outer")
    vector = b.method("reshape", scale, (-1,)) if isinstance(scale, fx.Node) else None
    folded = producer.fold(b, vector)
    total: Operand | None = b.sum_keepdim(folded, tuple(sorted(reduced - set(producer.collapsed))))
    total = b.mul(total, b.product(outer))
    total = b.add(total, _reduced_term(b, addend, addend_shape, y_shape, reduction.dims))
    if reduction.mean:
        total = b.div(total, count(y_shape, reduction.dims))
    assert isinstance(total, fx.Node)
    result = total if reduction.keepdim else b.squeeze(total, reduction.dims)
    assert isinstance(result, fx.Node)
    return result


def _scaled(b: Builder, term: Operand | None, factor: Operand) -> Operand | None:
    """term * factor, where None is "no term" (0), not 1 as for Builder.mul."""
    return None if term is None else b.mul(term, factor)


def _broadcast(term_shape: tuple[int, ...], other: tuple[int, ...] | None) -> tuple[int, ...]:
    """The terms' shape after a step with an operand of shape `other` (checked by `foldable`); with no
    term yet, `term_shape` is () and the answer is `other`'s shape."""
    assert other is not None
    return tuple(torch.broadcast_shapes(term_shape, other))


def _reduced_term(
    b: Builder,
    term: Operand | None,
    term_shape: tuple[int, ...],
    y_shape: tuple[int, ...],
    reduced: tuple[int, ...],
) -> Operand | None:
    """sum over `reduced` of `term` broadcast to `y_shape`, keeping dimensions: a sum where the term
    varies, a multiple of its size where it is constant."""
    if term is None:
        return None
    lined = aligned(term_shape, len(y_shape))
    varying = tuple(d for d in reduced if lined[d] != 1)
    repeats = count(y_shape, tuple(d for d in reduced if lined[d] == 1))
    if varying:
        assert isinstance(term, fx.Node)
        if len(term_shape) != len(y_shape):
            term = b.method("reshape", term, lined)
        term = b.sum_keepdim(term, varying)
    return b.mul(term, repeats)


def _batchnorm_affine(b: Builder, target: str, module: torch.nn.Module, rank: int) -> tuple[fx.Node, Operand]:
    """(scale, shift) of eval-mode batch norm, shaped to broadcast along the channel dimension."""
    lined = _channel_shape(module, rank)
    variance = b.attr(f"{target}.running_var")
    scale: Operand | None = b.call(torch.rsqrt, b.add(variance, float(module.eps)))  # type: ignore[arg-type]
    if module.weight is not None:  # type: ignore[truthy-function]
        scale = b.mul(b.attr(f"{target}.weight"), scale)
    assert isinstance(scale, fx.Node)
    shift = b.neg(b.mul(b.attr(f"{target}.running_mean"), scale))
    if module.bias is not None:  # type: ignore[truthy-function]
        shift = b.add(b.attr(f"{target}.bias"), shift)
    assert isinstance(shift, fx.Node)
    return b.method("reshape", scale, lined), b.method("reshape", shift, lined)


def fold_first(
    gm: fx.GraphModule,
    producer_at: Callable[[fx.GraphModule, fx.Node], Producer | None],
    folded_into: str,
) -> str | None:
    """Fold the first reduction that reaches a producer of `producer_at`'s kind through foldable
    steps; its description ("... folded into <folded_into>"), or None where none does."""
    for node in gm.graph.nodes:
        reduction = reduction_at(gm, node)
        if reduction is None:
            continue
        found = chain_to(gm, reduction, producer_at)
        if found is None or not foldable(found[0], found[1], reduction):
            continue
        producer, steps = found
        node.replace_all_uses_with(fold(gm, producer, steps, reduction))
        return f"{reduction.describe()} of {producer.name} folded into {folded_into}"
    return None
