"""Static rules for blue-team round 12: an autograd.Function's `apply` bound to a module-level name (the
Triton tutorial's `layer_norm = LayerNorm.apply`), and containers of the candidate's own modules
(`nn.Sequential(Own(), ...)` called, `nn.ModuleList([...])` looped over); the code reached through them is
checked like any other call-path code, and a name bound twice or a container that could take a PyTorch
layer later is not trusted."""

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


BLOCK = (
    "class Block(nn.Module):\n    def __init__(self, scale=1.0):\n        super().__init__()\n"
    "        self.scale = scale\n\n    def forward(self, x):\n        out = torch.empty_like(x)\n"
    f"        {LAUNCH}\n        return out\n\n\n"
)
SEQUENTIAL = "self.net = nn.Sequential(Block(), nn.Identity(), Block(2.0))"
MODULE_LIST = "self.layers = nn.ModuleList([Block(s) for s in (1.0, 2.0)])"
LOOP = "for layer in self.layers:\n    x = layer(x)\nreturn x"


@pytest.mark.parametrize(
    ("init", "forward"),
    [
        (SEQUENTIAL, "return self.net(x)"),
        ("self.net = nn.Sequential(*[Block() for _ in range(3)])", "return self.net(x)"),
        (MODULE_LIST, LOOP),
        ("self.layers = nn.Sequential(Block(), Block())", LOOP),
    ],
)
def test_containers_of_own_modules_reach_their_forwards(init: str, forward: str) -> None:
    source = model(forward, init, BLOCK)
    for strict in (True, False):
        assert codes(source, strict) == set(), source


@pytest.mark.parametrize(
    ("init", "forward"),
    [
        ("self.net = nn.Sequential(Block(), nn.ReLU())", "return self.net(x)"),
        (SEQUENTIAL + "\nself.net.append(nn.ReLU())", "return self.net(x)"),
        (SEQUENTIAL + "\nself.net.add_module('act', nn.ReLU())", "return self.net(x)"),
        (SEQUENTIAL + "\ngetattr(self, 'net').append(nn.ReLU())", "return self.net(x)"),
        (SEQUENTIAL + "\nself.net = nn.Sequential(nn.ReLU())", "return self.net(x)"),
        (MODULE_LIST + "\nself.layers += [nn.ReLU()]", LOOP),
        (MODULE_LIST + "\nself.layers[0] = nn.ReLU()", LOOP),
    ],
)
def test_containers_that_may_hold_a_pytorch_layer_stay_pytorch(init: str, forward: str) -> None:
    """Read as before: a torch.nn layer (called) or an opaque value (looped over, its launches unseen)."""
    assert codes(model(forward, init, BLOCK), True) & {"torch_compute_op", "no_backend_kernel"}


def test_code_reached_through_a_container_is_checked() -> None:
    extra = BLOCK.replace("        return out\n", "        return out * self.scale\n")
    for init, forward in ((SEQUENTIAL, "return self.net(x)"), (MODULE_LIST, LOOP)):
        assert "torch_compute_op" in codes(model(forward, init, extra), True)
