"""The searched backward behind an exported custom op: `register_searched_autograd`.

An exported op ``ns::name(Tensor <input>..., Tensor <state>..., *, int config=0) -> Tensor | (Tensor, ...)``
(the reference's inputs, then its parameters and buffers) runs a searched kernel below autograd, so the
autograd.Function inside ModelNew records nothing there. This registers, for that op, a backward that is a
second custom op, ``ns::name_backward(inputs, state, grads, config) -> (Tensor[], Tensor[])``: it runs the
forward again with gradients on (the caller's `forward`: ModelNew through `functional_call` where a kernel
serves) and returns `torch.autograd.grad` of it, so the gradients come from the kernel's own backward (its
autograd.Function's), as the search checked it. Being an op with a fake implementation, the backward traces
under torch.compile and passes `torch.library.opcheck`'s autograd and AOT dispatch checks. The price is a
second forward in every backward: a kernel whose forward and backward were exported as separate ops would
not pay it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Forward = Callable[[list[Any], list[Any], int], Any]  # (inputs, state, config) -> the op's output


def register_searched_autograd(op: Any, qualname: str, forward: Forward, n_inputs: int) -> Any:
    """Register on the custom op `op` (what `torch.library.custom_op` returned for `qualname`, schema as in
    the module's docstring, its first `n_inputs` tensors the inputs, the rest the state) a backward through
    `forward`'s own autograd; returns the backward op (``<qualname>_backward``). `op.register_autograd`
    replaces one registered before (the reference's)."""
    import torch

    schema = "(Tensor[] inputs, Tensor[] state, Tensor[] grads, int config=0) -> (Tensor[], Tensor[])"

    def backward_impl(
        inputs: list[Any], state: list[Any], grads: list[Any], config: int = 0
    ) -> tuple[list[Any], list[Any]]:
        return _gradients(forward, inputs, state, grads, config)

    def backward_fake(
        inputs: list[Any], state: list[Any], grads: list[Any], config: int = 0
    ) -> tuple[list[Any], list[Any]]:
        return [torch.empty_like(t) for t in inputs], [torch.empty_like(t) for t in state]

    backward_op = torch.library.custom_op(
        f"{qualname}_backward", backward_impl, mutates_args=(), schema=schema
    )
    backward_op.register_fake(backward_fake)
    namespace, _, name = qualname.partition("::")
    call_backward = getattr(getattr(torch.ops, namespace), f"{name}_backward").default

    def setup_context(
        ctx: Any, inputs: tuple[Any, ...], keyword_only_inputs: dict[str, Any], output: Any
    ) -> None:
        outputs = list(output) if isinstance(output, (list, tuple)) else [output]
        ctx.n_args, ctx.config = len(inputs), keyword_only_inputs.get("config", 0)
        ctx.save_for_backward(*inputs, *outputs)

    def backward(ctx: Any, *grad: Any) -> tuple[Any, ...]:
        saved = list(ctx.saved_tensors)
        arguments, outputs = saved[: ctx.n_args], saved[ctx.n_args :]
        tensors, state = arguments[:n_inputs], arguments[n_inputs:]
        upstream = [torch.zeros_like(o) if g is None else g for g, o in zip(grad, outputs, strict=True)]
        input_grads, state_grads = call_backward(tensors, state, upstream, ctx.config)
        return (*_differentiable(input_grads, tensors), *_differentiable(state_grads, state))

    op.register_autograd(backward, setup_context=setup_context)
    return call_backward


def _gradients(
    forward: Forward, inputs: Sequence[Any], state: Sequence[Any], grads: Sequence[Any], config: int
) -> tuple[list[Any], list[Any]]:
    """`forward` run with gradients on for every floating input and state tensor, then autograd.grad of
    its outputs with `grads`; zeros where no gradient reaches (and for non-floating tensors)."""
    import torch

    with torch.enable_grad():
        tracked = [t.detach().requires_grad_(t.is_floating_point()) for t in [*inputs, *state]]
        output = forward(tracked[: len(inputs)], tracked[len(inputs) :], config)
        outputs = list(output) if isinstance(output, (list, tuple)) else [output]
        pairs = [(o, g) for o, g in zip(outputs, grads, strict=True) if o.requires_grad]
        wrt = [t for t in tracked if t.requires_grad]
        found: Sequence[Any] = [None] * len(wrt)
        if pairs and wrt:
            found = torch.autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True)
    by_id = {id(t): g for t, g in zip(wrt, found, strict=True)}
    held = [*inputs, *state, *grads]
    result: list[Any] = []
    for tensor in tracked:
        grad = by_id.get(id(tensor))
        grad = torch.zeros_like(tensor) if grad is None else grad.detach()
        if any(grad.untyped_storage().data_ptr() == t.untyped_storage().data_ptr() for t in held + result):
            grad = grad.clone()  # a custom op's outputs may alias neither its inputs nor each other
        result.append(grad)
    return result[: len(inputs)], result[len(inputs) :]


def _differentiable(grads: Sequence[Any], like: Sequence[Any]) -> list[Any]:
    return [g if t.is_floating_point() else None for g, t in zip(grads, like, strict=True)]
