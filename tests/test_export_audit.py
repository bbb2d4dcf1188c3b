"""Served calls of an exported op are checked at random after a signature's first call: a kernel can tell
the judge's runner from a caller's process (`tests/adversarial/hacks/export_tell_by_file_path.py`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: the kernels run under its interpreter

import torch  # noqa: E402

from kernelevolve.export.dispatch import Dispatcher, kernel_path  # noqa: E402
from kernelevolve.export.loader import load_kernel_class  # noqa: E402

HACK = Path(__file__).parent / "adversarial" / "hacks" / "export_tell_by_file_path.py"


def _serve(dispatcher: Dispatcher, model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    sig = ((tuple(x.shape), str(x.dtype)),)
    assert dispatcher.route([x], 0, {"s"}) == ("s", False), sig
    out: torch.Tensor = dispatcher.run(
        [x], 0, {"s"}, kernel=lambda _s: model(x), reference=lambda: torch.relu(x)
    )
    return out


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path))


def test_a_kernel_wrong_only_outside_the_runner_is_switched_off() -> None:
    model = load_kernel_class(HACK.read_text(), "triton", "cpu")()
    x = torch.randn(300)
    dispatcher = Dispatcher({((tuple(x.shape), str(x.dtype)),): "s"}, "cpu", 1e-5, 1e-5, audit_every=1)
    assert torch.equal(_serve(dispatcher, model, x), torch.relu(x))  # its first call is right anyway
    assert torch.equal(_serve(dispatcher, model, x), torch.relu(x))  # wrong, caught, the reference's
    assert dispatcher.audits == {"passed": 1, "failed": 1}
    assert (0, "s") in dispatcher.disabled
    assert dispatcher.route([x], 0, {"s"}) == (None, False)


def test_an_honest_kernel_keeps_serving_through_audits() -> None:
    x = torch.randn(300)
    dispatcher = Dispatcher({((tuple(x.shape), str(x.dtype)),): "s"}, "cpu", 1e-5, 1e-5, audit_every=1)
    for _ in range(3):
        _serve(dispatcher, torch.nn.ReLU(), x)
    assert dispatcher.audits == {"passed": 3}
    assert list(dispatcher.calls) == [kernel_path("s")] * 3
    assert not dispatcher.disabled


def test_audits_off_serve_unchecked() -> None:
    model = load_kernel_class(HACK.read_text(), "triton", "cpu")()
    x = torch.randn(300)
    dispatcher = Dispatcher({((tuple(x.shape), str(x.dtype)),): "s"}, "cpu", 1e-5, 1e-5, audit_every=0)
    _serve(dispatcher, model, x)
    assert not torch.equal(_serve(dispatcher, model, x), torch.relu(x))
    assert not dispatcher.audits
