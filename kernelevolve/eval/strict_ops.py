"""Which dispatched ATen ops count as PyTorch doing a strict candidate's work (runner side).

An allow-list, not a list of compute ops: ATen has hundreds of ops that compute without a pointwise or
reduction tag (prelu, threshold_, masked_fill_, le_, index, mode, dist...), and a deny-list misses
whichever one a candidate picks next. What strict mode lets PyTorch do in forward is what the static
checks' TORCH_OK allows: allocate (factories, `*_like`, `new_*`), view (any op whose schema says its
output aliases its input), copy, fill and read metadata. Every other op computes, but for one counter
step: a Python int added in place to a 0-d integer tensor (`num_batches_tracked.add_(1)`, as nn.BatchNorm
moves its count in training mode). It reads nothing but the counter and a host number, like `fill_`.
"""

from __future__ import annotations

from typing import Any

# Copies, fills and metadata that are not views by their schema; `_local_scalar_dense` (`.item()`) is a
# host read, counted as such (`host_reads`), not as compute.
_DATA_MOVEMENT_NAMES = """
    clone copy_ _to_copy to contiguous fill_ zero_ lift lift_fresh lift_fresh_copy _unsafe_view _reshape_copy
    empty_like zeros_like ones_like full_like rand_like randn_like randint_like new_empty new_empty_strided
    new_zeros new_ones new_full resize_ resize_as_ set_ record_stream pin_memory _pin_memory
    _local_scalar_dense size stride numel dim storage_offset sym_size sym_stride sym_numel sym_storage_offset
    is_contiguous is_non_overlapping_and_dense is_strides_like_format is_same_size is_pinned is_complex
    is_floating_point _assert_tensor_metadata _assert_async _assert_scalar _functional_assert_async
"""
_DATA_MOVEMENT = frozenset(_DATA_MOVEMENT_NAMES.split())


def computes(func: Any, args: Any, kwargs: dict[str, Any]) -> bool:
    """Whether a dispatched op computes: not a view, not a factory (no tensor among its arguments, so it
    computes nothing from the inputs) and not a copy, fill or metadata op."""
    import torch

    if getattr(func, "namespace", "aten") != "aten":
        # a custom op can be named like an allowed one (`mylib::clone`); its kernel's ops run unseen
        return _has_tensor(args) or _has_tensor(kwargs)
    if _name(func) in _DATA_MOVEMENT or getattr(func, "is_view", False) or _counter_step(func, args):
        return False
    tags = set(getattr(func, "tags", ()))
    if torch.Tag.inplace_view in tags or torch.Tag.view_copy in tags:
        return False  # transpose_ and friends; view_copy: a view's copy (permute_copy...)
    return _has_tensor(args) or _has_tensor(kwargs)


def _counter_step(func: Any, args: Any) -> bool:
    """`counter.add_(n)`: a 0-d integer tensor of its own (a buffer, not a view of an element of a larger
    tensor: an element loop would add in PyTorch) moved by a Python int (not a bool, not a tensor)."""
    import torch

    if _name(func) != "add_" or not isinstance(args, (list, tuple)) or len(args) != 2:
        return False
    counter, step = args
    return (
        isinstance(counter, torch.Tensor)
        and counter.dim() == 0
        and not counter._is_view()
        and not counter.is_floating_point()
        and not counter.is_complex()
        and counter.dtype != torch.bool
        and type(step) is int
    )


# Autograd's own backward of a split (`chunk`, `split`) or `unbind` joins its pieces' gradients back into the
# input's layout, each piece in its own place; the forward's views were allowed, so their backward is too.
# Told by the node the engine runs, by its name and by its kind: a torch.autograd.Function's node is named
# "<class>Backward", but that name can be set (`F._backward_cls.__name__ = "SplitBackward0"`), and a `cat` in
# the candidate's own backward then passed as the engine's join (`tests/adversarial/hacks/
# strict_cat_in_backward_named_split_join.py`); a Function's node is always a `_FunctionBase`, the engine's
# own never.
_VIEW_JOINS = {"SplitBackward0": "cat", "SplitWithSizesBackward0": "cat", "UnbindBackward0": "stack"}


def joins_view_gradients(func: Any) -> bool:
    """Whether this op is the engine joining the gradients of a split's or unbind's pieces (the caller
    still treats the join as a copy of its pieces: `steered_copies.CallMemory.joined`)."""
    import torch

    node = torch._C._current_autograd_node()
    if node is None or issubclass(type(node), torch._C._FunctionBase):
        return False
    return _VIEW_JOINS.get(type(node).__name__) == _name(func)


def op_name(func: Any) -> str:
    """The op's name without its overload (``prelu`` for ``aten.prelu.default``)."""
    return _name(func)


def _name(func: Any) -> str:
    packet = getattr(func, "overloadpacket", None)
    return str(getattr(packet, "__name__", func))


def _has_tensor(value: Any) -> bool:
    import torch

    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_has_tensor(v) for v in value.values())
    return False
