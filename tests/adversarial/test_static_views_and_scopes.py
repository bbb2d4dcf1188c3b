"""Rules for blue-team round 10 (strict mode): view ops beyond reshape/permute are views, not compute;
their compute-looking neighbours stay refused."""

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
