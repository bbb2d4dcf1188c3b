"""Static rules for blue-team round 12: an autograd.Function's `apply` bound to a module-level name (the
Triton tutorial's `layer_norm = LayerNorm.apply`), and that the code reached through it is checked like any
other call-path code; a name bound twice, or declared global, is not trusted."""

from __future__ import annotations

import pytest

from tests.adversarial.test_static_checks import LAUNCH, codes, model

OUT = "out = torch.empty_like(x)\n"


def _function(forward_body: str) -> str:
    return (
        "class Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        f"        out = torch.empty_like(x)\n        {forward_body}\n        return out\n\n"
        "    @staticmethod\n    def backward(ctx, dy):\n        dx = torch.empty_like(dy)\n"
        "        k[(1,)](dy, dx, dy.numel(), BLOCK=64)\n        return dx\n\n\n"
    )


def test_apply_alias_reaches_the_function() -> None:
    source = model("return relu(x)", extra=_function(LAUNCH) + "relu = Fn.apply\n")
    for strict in (True, False):
        assert codes(source, strict) == set(), source


@pytest.mark.parametrize(
    "extra",
    [
        "relu = Fn.apply\nrelu = torch.relu\n",  # bound twice: the last binding is what runs
        "relu = Fn.apply\n\n\ndef rebind():\n    global relu\n    relu = torch.relu\n",
    ],
)
def test_apply_alias_bound_again_is_not_trusted(extra: str) -> None:
    source = model("return relu(x)", extra=_function(LAUNCH) + extra)
    assert "no_backend_kernel" in codes(source, True), source


def test_code_reached_through_an_apply_alias_is_checked() -> None:
    source = model(
        "return relu(x)", extra=_function(LAUNCH + "\n        out = out.exp()") + "relu = Fn.apply\n"
    )
    assert "torch_compute_op" in codes(source, True), source
