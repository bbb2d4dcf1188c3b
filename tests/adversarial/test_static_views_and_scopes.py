"""Rules for blue-team round 10 (strict mode): view ops beyond reshape/permute are views, not compute; a
switch scoped to a `with` block (grad mode, a profiler or NVTX range, autocast turned off) computes
nothing; questions about the process's modes read no tensor. Their compute-looking neighbours stay
refused."""

from __future__ import annotations

import pytest

from tests.adversarial.test_static_checks import LAUNCH, codes, model

OUT = f"out = torch.empty_like(x)\n{LAUNCH}\n"


@pytest.mark.parametrize(
    "line",
    [
        "v = x.swapaxes(0, 1)",
        "v = torch.swapdims(x, 0, 1)",
        "v = torch.movedim(x, 0, -1)",
        "v = x.moveaxis(0, -1)",
        "v = x.unfold(0, 2, 2)",
        "a, b = x.tensor_split(2, dim=-1)",
        "a, b = torch.tensor_split(x, 2)",
        "v = x[:1].broadcast_to(x.shape)",
        "a, b = torch.broadcast_tensors(x, y)",
        "v = torch.select(x, 0, 0)",
        "v = torch.unflatten(x, 0, (1, -1))",
    ],
)
def test_views_are_not_compute(line: str) -> None:
    assert codes(model(f"{line}\n{OUT}return out")) == set()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # im2col by F.unfold copies and computes; the Tensor method is the view
        (f"v = torch.nn.functional.unfold(x, 2)\n{OUT}return out", {"torch_compute_op"}),
        # a broadcast view of either input is still that input
        ("a, b = torch.broadcast_tensors(x, y)\nreturn b", {"returns_input"}),
        ("return x.swapaxes(0, 1)", {"returns_input"}),
    ],
)
def test_view_neighbours_keep_their_verdicts(body: str, expected: set[str]) -> None:
    assert expected <= codes(model(body))


@pytest.mark.parametrize(
    "item",
    [
        "torch.set_grad_enabled(False)",
        "torch.autograd.set_grad_enabled(True)",
        'torch.profiler.record_function("k")',
        'torch.autograd.profiler.record_function("k")',
        'torch.cuda.nvtx.range("k") if x.is_cuda else contextlib.nullcontext()',
        "torch.autocast(device_type=x.device.type, enabled=False)",
        'torch.amp.autocast("cuda", enabled=False)',
        "torch.cuda.device_of(x)",
    ],
)
def test_scoped_switches_in_a_with_compute_nothing(item: str) -> None:
    body = f"with {item}:\n    {OUT.replace(chr(10), chr(10) + '    ')}return out"
    assert codes(model(body, extra="import contextlib\n")) == set()


@pytest.mark.parametrize(
    "body",
    [
        # a bare call sets process state, outside any block
        f"torch.set_grad_enabled(False)\n{OUT}return out",
        # autocast on (or not said off) lowers PyTorch's own precision
        f'with torch.autocast("cuda"):\n    out = torch.empty_like(x)\n    {LAUNCH}\nreturn out',
        f'with torch.autocast("cuda", enabled=True):\n    out = torch.empty_like(x)\n    {LAUNCH}\nreturn out',
        f'with torch.autocast("cuda", enabled=flag):\n    out = torch.empty_like(x)\n    {LAUNCH}\nreturn out',
        # the with item's arguments are still read: a mode from tensor data is work on the host
        f"with torch.set_grad_enabled(bool(x.sum())):\n    out = torch.empty_like(x)\n    {LAUNCH}\nreturn out",
        f"with torch.profiler.record_function(str(x.item())):\n    out = torch.empty_like(x)\n    {LAUNCH}\nreturn out",
    ],
)
def test_switches_outside_their_scope_stay_refused(body: str) -> None:
    assert codes(model(body, extra="flag = True\n")) != set()


@pytest.mark.parametrize(
    "call",
    [
        "torch.compiler.is_compiling()",
        "torch.is_inference_mode_enabled()",
        "torch.is_autocast_enabled()",
        "torch.get_float32_matmul_precision()",
        "torch.accelerator.is_available()",
        "torch.accelerator.current_accelerator()",
    ],
)
def test_mode_questions_are_metadata(call: str) -> None:
    assert codes(model(f"mode = {call}\n{OUT}return out")) == set()


def test_capture_state_stays_refused() -> None:
    """Whether the stream is being captured into a CUDA graph would tell a timed call from a checked one if
    timing ever replays graphs."""
    assert codes(model(f"mode = torch.cuda.is_current_stream_capturing()\n{OUT}return out")) == {
        "torch_compute_op"
    }


@pytest.mark.parametrize(
    ("guard", "expected"),
    [
        # the input handed back only when it holds no element: the honest early return
        ("if x.numel() == 0:\n    return x", set()),
        ("if not x.numel():\n    return x", set()),
        # any other guard, another tensor's size, or a view returned keep the verdict
        ("if x.numel() != 0:\n    return x", {"returns_input"}),
        ("if x.numel() > 0:\n    return x", {"returns_input"}),
        ("if y.numel() == 0:\n    return x", {"returns_input"}),
        ("if x.numel() == 0:\n    return x.view(-1)", {"returns_input"}),
        ("if x.numel() == 0:\n    return x\nelse:\n    return x", {"returns_input"}),
        ("if x.numel() == 0:\n    pass\nreturn x", {"returns_input"}),
    ],
)
def test_empty_input_early_return(guard: str, expected: set[str]) -> None:
    assert codes(model(f"{guard}\n{OUT}return out")) == expected
