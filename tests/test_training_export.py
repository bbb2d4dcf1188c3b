"""An exported training op: a custom op whose backward is the searched kernel's (register_searched_autograd),
checked by torch.library.opcheck (gradients included) and trained in a small model, whose loss curve must
follow the reference's. CPU, Triton's interpreter, the shipped RMSNorm forward + backward template.

The op here is built with the schema the export gives its ops (``ns::name(Tensor x, Tensor weight, *, int
config=0)``, the kernel through functional_call), without a stored run behind it.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelevolve.export.loader import interpreter_ready, load_kernel_class
from kernelevolve.specs.training_autograd import register_searched_autograd

TEMPLATE = Path(__file__).resolve().parent.parent / "kernelevolve/variation/templates/triton/rmsnorm_train.py"
_names = itertools.count()

pytestmark = pytest.mark.skipif(not interpreter_ready(), reason="triton was imported without its interpreter")


class Reference(torch.nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def _exported(source: str, dim: int) -> tuple[Any, list[int]]:
    """A custom op running ModelNew of `source` (no autograd of its own below the op), with the searched
    backward registered; and a list counting the op's backward calls."""
    kernel = load_kernel_class(source, "triton", "cpu")(dim)
    qualname = f"kernelevolve_test::rmsnorm_{next(_names)}"
    backward_calls = [0]

    def run(inputs: list[torch.Tensor], state: list[torch.Tensor], config: int = 0) -> torch.Tensor:
        return torch.func.functional_call(kernel, {"weight": state[0]}, tuple(inputs))

    def impl(x: torch.Tensor, weight: torch.Tensor, *, config: int = 0) -> torch.Tensor:
        return run([x], [weight], config).clone()

    def fake(x: torch.Tensor, weight: torch.Tensor, *, config: int = 0) -> torch.Tensor:
        return torch.empty_like(x)

    def counted(inputs: list[torch.Tensor], state: list[torch.Tensor], config: int) -> torch.Tensor:
        backward_calls[0] += 1
        return run(inputs, state, config)

    schema = "(Tensor x, Tensor weight, *, int config=0) -> Tensor"
    op = torch.library.custom_op(qualname, impl, mutates_args=(), schema=schema)
    op.register_fake(fake)
    register_searched_autograd(op, qualname, counted, n_inputs=1)
    namespace, _, name = qualname.partition("::")
    return getattr(getattr(torch.ops, namespace), name).default, backward_calls


def test_opcheck_passes_with_the_searched_backward() -> None:
    op, calls = _exported(TEMPLATE.read_text(), 24)
    x = torch.randn(3, 5, 24, requires_grad=True)
    w = torch.nn.Parameter(torch.rand(24) + 0.5)
    torch.library.opcheck(op, (x, w))
    assert calls[0] > 0  # opcheck's gradient checks went through the kernel's backward


def test_gradients_are_the_kernels_own_a_wrong_backward_shows() -> None:
    """The op's gradients come from the searched backward: a template with a wrong dx gives a wrong one
    through the op, where PyTorch's autograd of the forward would have been right."""
    x = torch.randn(4, 24)
    w = torch.rand(24) + 0.5
    g = torch.randn(4, 24)
    reference = Reference(24)
    with torch.no_grad():
        reference.weight.copy_(w)
    x_ref = x.clone().requires_grad_(True)
    reference(x_ref).backward(g)
    source = TEMPLATE.read_text()
    wrong = source.replace("dx = rstd * g - x * (rstd * rstd * rstd) * dot", "dx = rstd * g")
    assert wrong != source
    for text, right in ((source, True), (wrong, False)):
        op, _ = _exported(text, 24)
        xo, wo = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
        op(xo, wo).backward(g)
        assert xo.grad is not None and wo.grad is not None and reference.weight.grad is not None
        assert torch.allclose(wo.grad, reference.weight.grad, atol=1e-4, rtol=1e-4)
        assert torch.allclose(xo.grad, x_ref.grad, atol=1e-4, rtol=1e-4) is right


class _Net(torch.nn.Module):
    def __init__(self, norm: torch.nn.Module) -> None:
        super().__init__()
        self.up, self.norm, self.down = torch.nn.Linear(8, 24), norm, torch.nn.Linear(24, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.norm(self.up(x))))


class _ExportedNorm(torch.nn.Module):
    def __init__(self, op: Any, dim: int) -> None:
        super().__init__()
        self.op = op
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.op(x, self.weight)


def test_a_small_model_trains_with_the_exported_op_as_with_the_reference() -> None:
    op, calls = _exported(TEMPLATE.read_text(), 24)
    torch.manual_seed(0)
    reference = _Net(Reference(24))
    exported = _Net(_ExportedNorm(op, 24))
    exported.load_state_dict(reference.state_dict())
    data, target = torch.randn(16, 8), torch.randn(16, 3)
    curves: list[list[float]] = []
    for model in (reference, exported):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for _ in range(6):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(data), target)
            loss.backward()
            optimizer.step()
            losses.append(float(loss))
        curves.append(losses)
    assert curves[0][-1] < curves[0][0]  # it learns
    assert curves[1] == pytest.approx(curves[0], rel=1e-4, abs=1e-6)
    assert calls[0] == 6
    for theirs, ours in zip(reference.parameters(), exported.parameters(), strict=True):
        assert torch.allclose(theirs, ours, atol=1e-4, rtol=1e-4)


def test_a_searched_training_spec_exports_with_its_own_backward(tmp_path: Path) -> None:
    """optimize() on a training spec, then its custom op: a kernel serves, opcheck's gradient checks pass
    and the gradients through the op are the reference's."""
    import kernelevolve

    result = kernelevolve.optimize(
        "train_rmsnorm", platform="cpu", budget=3, operators=["template"], store=False, run_root=tmp_path
    )
    op = result.custom_op()
    assert op.schema.startswith("kernelevolve::train_rmsnorm(Tensor x, Tensor weight, *, int config=0)")
    x = torch.randn(2, 3, 200, requires_grad=True)
    w = torch.nn.Parameter(torch.rand(200) + 0.5)
    assert op.serving_shape([x]) is not None  # the searched kernel, not the reference, serves
    torch.library.opcheck(op.op, (x, w))
    out = op.op(x, w)
    g = torch.randn_like(out)
    out.backward(g)
    x_ref, w_ref = x.detach().clone().requires_grad_(True), w.detach().clone().requires_grad_(True)
    (x_ref * torch.rsqrt(x_ref.pow(2).mean(-1, keepdim=True) + 1e-6) * w_ref).backward(g)
    assert x.grad is not None and w.grad is not None
    assert torch.allclose(x.grad, x_ref.grad, atol=1e-4, rtol=1e-4)  # type: ignore[arg-type]
    assert torch.allclose(w.grad, w_ref.grad, atol=1e-4, rtol=1e-4)  # type: ignore[arg-type]
