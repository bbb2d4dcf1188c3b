"""What the rules ask of FX nodes: the op a node is, its arguments by position or name, its shape.

Torch spells one op several ways in a traced graph (`torch.sum(x, 1)`, `x.sum(dim=1)`,
`operator.mul`, `torch.mul`, `x.mul(...)`): `op_name` gives them one name, so a rule matches the op
and not its spelling. Shapes are those `trace.propagate_shapes` recorded at the traced shape.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx as fx

# call_function targets by canonical op name (methods of the same name map through _METHODS)
_FUNCTIONS: dict[Any, str] = {
    operator.add: "add",
    operator.sub: "sub",
    operator.mul: "mul",
    operator.truediv: "div",
    operator.neg: "neg",
    operator.matmul: "matmul",
    operator.getitem: "getitem",
    getattr: "getattr",
    torch.add: "add",
    torch.sub: "sub",
    torch.subtract: "sub",
    torch.mul: "mul",
    torch.multiply: "mul",
    torch.div: "div",
    torch.true_divide: "div",
    torch.neg: "neg",
    torch.negative: "neg",
    torch.matmul: "matmul",
    torch.mm: "matmul",
    torch.bmm: "matmul",
    torch.addmm: "addmm",
    torch.nn.functional.linear: "linear",
    torch.sum: "sum",
    torch.mean: "mean",
    torch.amax: "amax",
    torch.amin: "amin",
    torch.max: "max",
    torch.min: "min",
    torch.logsumexp: "logsumexp",
    torch.prod: "prod",
    torch.clone: "clone",
    torch.detach: "detach",
    torch.nn.functional.dropout: "dropout",
}
_METHODS = {
    "add": "add",
    "sub": "sub",
    "subtract": "sub",
    "mul": "mul",
    "multiply": "mul",
    "div": "div",
    "true_divide": "div",
    "neg": "neg",
    "matmul": "matmul",
    "mm": "matmul",
    "bmm": "matmul",
    "sum": "sum",
    "mean": "mean",
    "amax": "amax",
    "amin": "amin",
    "max": "max",
    "min": "min",
    "logsumexp": "logsumexp",
    "prod": "prod",
    "clone": "clone",
    "detach": "detach",
    "contiguous": "contiguous",
}
# parameter names of the ops we match, for arguments given by position
_SIGNATURES: dict[str, tuple[str, ...]] = {
    "sum": ("input", "dim", "keepdim"),
    "mean": ("input", "dim", "keepdim"),
    "amax": ("input", "dim", "keepdim"),
    "amin": ("input", "dim", "keepdim"),
    "logsumexp": ("input", "dim", "keepdim"),
    "prod": ("input", "dim", "keepdim"),
    "max": ("input", "dim", "keepdim"),
    "min": ("input", "dim", "keepdim"),
    "add": ("input", "other"),
    "sub": ("input", "other"),
    "mul": ("input", "other"),
    "div": ("input", "other"),
    "neg": ("input",),
    "matmul": ("input", "other"),
    "addmm": ("input", "mat1", "mat2"),
    "linear": ("input", "weight", "bias"),
    "dropout": ("input", "p", "training", "inplace"),
    "clone": ("input",),
    "detach": ("input",),
    "contiguous": ("input",),
}


def op_name(node: fx.Node) -> str | None:
    """The canonical name of a call_function or call_method node's op, or None."""
    if node.op == "call_function":
        try:
            return _FUNCTIONS.get(node.target)
        except TypeError:  # an unhashable target
            return None
    if node.op == "call_method":
        return _METHODS.get(str(node.target))
    return None


def module_of(gm: fx.GraphModule, node: fx.Node) -> torch.nn.Module | None:
    return gm.get_submodule(str(node.target)) if node.op == "call_module" else None


def arguments(node: fx.Node) -> dict[str, Any] | None:
    """The node's arguments by parameter name (positional ones named), or None for an op not known,
    extra positional arguments or keywords the op does not take (`dtype=`, `out=`, `alpha=`)."""
    name = op_name(node)
    signature = _SIGNATURES.get(name or "")
    if signature is None or len(node.args) > len(signature):
        return None
    bound = dict(zip(signature, node.args, strict=False))
    for key, value in node.kwargs.items():
        if key not in signature or key in bound:
            return None
        bound[key] = value
    return bound


def shape(value: Any) -> tuple[int, ...] | None:
    """The shape recorded for a tensor-valued node; () for a Python number; else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ()
    if not isinstance(value, fx.Node):
        return None
    meta = value.meta.get("tensor_meta")
    found = getattr(meta, "shape", None)
    return tuple(int(s) for s in found) if found is not None else None


def dims(value: Any, rank: int) -> tuple[int, ...] | None:
    """A reduction's `dim` argument as sorted non-negative dimensions; None where it is not literal."""
    if rank == 0:
        return None
    if value is None:
        return tuple(range(rank))
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items or not all(isinstance(d, int) and not isinstance(d, bool) for d in items):
        return None
    if not all(-rank <= d < rank for d in items):
        return None
    return tuple(sorted({d % rank for d in items}))


def depends_on(node: Any, ancestor: fx.Node) -> bool:
    """Whether `node`'s value is computed from `ancestor`'s."""
    if not isinstance(node, fx.Node):
        return False
    seen: set[fx.Node] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current is ancestor:
            return True
        if current in seen:
            continue
        seen.add(current)
        stack.extend(current.all_input_nodes)
    return False


def broadcasts_into(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    """Whether a tensor of shape `small` broadcast with one of shape `big` gives `big`."""
    return len(small) <= len(big) and all(
        s in (1, b) for s, b in zip(reversed(small), reversed(big), strict=False)
    )


def aligned(small: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """`small` with leading 1s up to `rank`: how it lines up with the dimensions it broadcasts into."""
    return (1,) * (rank - len(small)) + small
