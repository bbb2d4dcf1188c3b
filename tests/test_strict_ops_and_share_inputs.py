"""Two run-time rules honest kernels met: strict mode's counter step (BatchNorm's num_batches_tracked) and
the stale-replay call's inputs where a spec's input shapes change with the seed (jagged batches)."""

from __future__ import annotations

import pytest

from kernelevolve.eval import kernel_share, strict_ops

torch = pytest.importorskip("torch")


def _computes(call: str, *args: object) -> bool:
    return strict_ops.computes(getattr(torch.ops.aten, call).Tensor, args, {})


def test_only_a_python_int_added_to_a_0d_integer_tensor_is_a_counter_step() -> None:
    counter = torch.tensor(3, dtype=torch.int64)
    assert not _computes("add_", counter, 1)
    assert _computes("add_", torch.tensor(3.0), 1)  # a float scalar: compute
    assert _computes("add_", torch.tensor([1, 2]), 1)  # not 0-d
    assert _computes("add_", counter, torch.tensor(1))  # a tensor step carries data
    assert _computes("add_", counter, 1.5)  # not an int
    assert _computes("add_", counter, True)  # a bool is an int only by inheritance
    assert _computes("add_", torch.tensor(True), 1)
    assert _computes("mul_", counter, 2)
    assert _computes("add_", torch.tensor([1, 2])[0], 1)  # an element of a larger tensor: an element loop


def test_the_stale_call_takes_the_records_shapes_with_new_floating_values() -> None:
    def make_inputs(seed: int) -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        lengths = torch.randint(0, 5, (4,), generator=generator)
        return [torch.randn(int(lengths.sum()) + 1, 3, generator=generator), lengths]

    record, fresh = make_inputs(1), make_inputs(2)
    assert kernel_share._layout(fresh) != kernel_share._layout(record)
    assert kernel_share._layout(make_inputs(1)) == kernel_share._layout(record)
    derived = kernel_share._record_shaped(make_inputs(1), 2)
    assert kernel_share._layout(derived) == kernel_share._layout(record)
    assert torch.equal(derived[1], record[1])  # the structure (lengths) kept
    assert not torch.equal(derived[0], record[0])  # the values changed
    assert torch.equal(derived[0].sign(), record[0].sign())  # within the input's distribution


def test_only_autograds_join_of_a_splits_gradients_is_let_through() -> None:
    """`cat` run by the engine for SplitBackward0 (an honest `x.chunk(2, -1)` before a Function) is told
    apart from the same op called anywhere else, a custom Function's backward included."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[tuple[str, bool]] = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            seen.append((strict_ops.op_name(func), strict_ops.joins_view_gradients(func)))
            return func(*args, **(kwargs or {}))

    class CatInBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # type: ignore[no-untyped-def]
            return x.clone()

        @staticmethod
        def backward(ctx, g):  # type: ignore[no-untyped-def]
            return torch.cat([g[:1], g[1:]])

    x = torch.randn(4, 6, requires_grad=True)
    pieces = x.chunk(2, dim=-1)
    with Spy():
        torch.cat([x, x])
        torch.autograd.grad(pieces, x, [torch.ones(4, 3), torch.ones(4, 3)])
        torch.autograd.grad(CatInBackward.apply(x), x, torch.ones(4, 6))
    cats = [joined for name, joined in seen if name == "cat"]
    assert cats == [False, True, False]


def test_a_function_node_named_like_the_engines_join_is_not_one() -> None:
    """A Function's node class renamed `SplitBackward0`: its `cat` is the candidate's, not the engine's."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[bool] = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            if strict_ops.op_name(func) == "cat":
                seen.append(strict_ops.joins_view_gradients(func))
            return func(*args, **(kwargs or {}))

    class Renamed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # type: ignore[no-untyped-def]
            return x.clone()

        @staticmethod
        def backward(ctx, g):  # type: ignore[no-untyped-def]
            return torch.cat([g[:1], g[1:]])

    Renamed._backward_cls.__name__ = "SplitBackward0"  # type: ignore[attr-defined]
    x = torch.randn(4, 6, requires_grad=True)
    with Spy():
        torch.autograd.grad(Renamed.apply(x), x, torch.ones(4, 6))
    assert seen == [False]
