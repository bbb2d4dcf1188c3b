"""The cross-entropy training specs' tolerances (experiments/training_tolerance): an honest fp32 kernel that
only sums in another order passes on every seed, TF32 (which train_fused_linear_ce refuses) and a wrong
gradient fail. Judged by the harness's own rule (`within_tolerance`) against the judge's training step."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from kernelevolve.eval.correctness import within_tolerance
from kernelevolve.paths import SPEC_DIR
from kernelevolve.platforms import load_platform
from kernelevolve.specs import reference
from kernelevolve.specs.input_distributions import distributed_inputs
from kernelevolve.specs.loading import load_spec_file
from kernelevolve.specs.training import judged_source
from kernelevolve.types import KernelSpec, ShapeCase

SEEDS = range(30)
Mm = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
Outputs = list[torch.Tensor]


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """Rounded to TF32's 10 mantissa bits, to nearest even, as a tensor core reads fp32."""
    bits = t.abs().contiguous().view(torch.int32)
    bits = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF
    return torch.copysign(bits.view(torch.float32), t)


def _split_k(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The reduction in four slices, the last first: a split-K GEMM's order."""
    k = a.shape[1]
    bounds = [round(i * k / 4) for i in range(5)]
    out = torch.zeros(a.shape[0], b.shape[1])
    for lo, hi in reversed(list(zip(bounds, bounds[1:], strict=False))):
        out = out + a[:, lo:hi] @ b[lo:hi]
    return out


def _three_tf32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a_hi, b_hi = _tf32(a), _tf32(b)
    return _tf32(a - a_hi) @ b_hi + a_hi @ _tf32(b - b_hi) + a_hi @ b_hi


def _linear_ce(x: torch.Tensor, w: torch.Tensor, t: torch.Tensor, g: torch.Tensor, mm: Mm) -> Outputs:
    n = x.shape[0]
    z = mm(x, w.t())
    lse = torch.logsumexp(z, dim=1)
    d = torch.exp(z - lse[:, None])
    d[torch.arange(n), t] -= 1.0
    d = d * (g / n)
    return [(lse - z.gather(1, t[:, None])[:, 0]).mean(), mm(d, w), mm(d.t(), x)]


def _linear_ce_chunked(x: torch.Tensor, w: torch.Tensor, t: torch.Tensor, g: torch.Tensor) -> Outputs:
    """Liger-Kernel's order: tokens in chunks of 4, the weight gradient accumulated, g applied last."""
    n = x.shape[0]
    rows, gx, gw = torch.empty(n), torch.empty_like(x), torch.zeros_like(w)
    for start in range(0, n, 4):
        xc, tc = x[start : start + 4], t[start : start + 4]
        z = xc @ w.t()
        m = z.max(dim=1, keepdim=True).values
        e = torch.exp(z - m)
        s = e.sum(dim=1, keepdim=True)
        rows[start : start + 4] = (m + torch.log(s))[:, 0] - z.gather(1, tc[:, None])[:, 0]
        d = e / s
        d[torch.arange(len(tc)), tc] -= 1.0
        d = d / n
        gx[start : start + 4] = d @ w
        torch.addmm(gw, d.t(), xc, out=gw)
    return [rows.sum() / n, gx * g, gw * g]


def _softmax_ce_online(z: torch.Tensor, t: torch.Tensor, g: torch.Tensor) -> Outputs:
    """A two-chunk online log-sum-exp, the rows summed last first."""
    n, half = z.shape[0], z.shape[1] // 2
    m1, m2 = z[:, :half].max(dim=1).values, z[:, half:].max(dim=1).values
    m = torch.maximum(m1, m2)
    s = torch.exp(z[:, :half] - m1[:, None]).sum(1) * torch.exp(m1 - m)
    s = s + torch.exp(z[:, half:] - m2[:, None]).sum(1) * torch.exp(m2 - m)
    lse = m + torch.log(s)
    d = torch.exp(z - lse[:, None])
    d[torch.arange(n), t] -= 1.0
    return [(lse - z.gather(1, t[:, None])[:, 0]).flip(0).sum() / n, d * g / n]


def _trials(
    name: str, shape: ShapeCase | None = None
) -> list[tuple[KernelSpec, list, Outputs, torch.Tensor]]:
    """(spec, inputs, the judge's reference outputs flattened, head weight or empty) per seed and
    distribution, at the spec's CPU shape or `shape`."""
    spec = load_spec_file(SPEC_DIR / f"{name}.yaml", load_platform("cpu"))
    module = reference.load_reference(judged_source(spec))
    reference.apply_shape(module, shape or spec.shapes[0])
    trials = []
    for distribution in spec.input_distributions:
        for seed in SEEDS:
            step = reference.build_model(module.Model, module, seed, "cpu", torch.float32)
            inputs = distributed_inputs(
                reference.make_inputs(module, seed, "cpu", torch.float32), distribution, seed
            )
            with torch.no_grad():
                loss, input_grads, parameter_grads = step(*inputs)
            weights = [p.detach() for p in step.parameters()]
            trials.append(
                (spec, inputs, [loss, *input_grads, *parameter_grads], weights[0] if weights else None)
            )
    return trials


def _passes(spec: KernelSpec, expected: Outputs, got: Outputs) -> bool:
    return within_tolerance(tuple(expected), tuple(got), spec.atol, spec.rtol)[0]


def _wrong(expected: Outputs, tokens: int) -> list[Outputs]:
    """Each gradient in turn off by 1.01, or without the 1 / tokens of the mean."""
    out = []
    for k in range(1, len(expected)):
        for factor in (1.01, float(tokens)):
            wrong = list(expected)
            wrong[k] = expected[k] * factor
            out.append(wrong)
    return out


@pytest.mark.parametrize(
    "shape",
    [None, ShapeCase("t64_h64_v512", {"num_tokens": 64, "hidden": 64, "vocab": 512})],
    ids=["cpu", "t64"],
)
def test_fused_linear_ce_admits_fp32_reordering_and_3xtf32_refuses_tf32_and_wrong_gradients(
    shape: ShapeCase | None,
) -> None:
    refused_tf32 = 0
    trials = _trials("train_fused_linear_ce", shape)
    for spec, (x, t, (g,)), expected, w in trials:
        with torch.no_grad():
            for honest in (
                _linear_ce_chunked(x, w, t, g),
                _linear_ce(x, w, t, g, lambda a, b: (b.t().contiguous() @ a.t().contiguous()).t()),
                _linear_ce(x, w, t, g, _split_k),
                _linear_ce(x, w, t, g, _three_tf32),
            ):
                assert _passes(spec, expected, honest)
            refused_tf32 += not _passes(
                spec, expected, _linear_ce(x, w, t, g, lambda a, b: _tf32(a) @ _tf32(b))
            )
        assert not any(_passes(spec, expected, wrong) for wrong in _wrong(expected, x.shape[0]))
    # every trial at the CPU shape; at the larger one a trial whose upstream gradient is tiny may pass
    assert refused_tf32 == len(trials) if shape is None else refused_tf32 >= 0.9 * len(trials)


def test_softmax_ce_admits_fp32_reordering_and_refuses_wrong_gradients() -> None:
    for spec, (z, t, (g,)), expected, _ in _trials("train_softmax_ce"):
        assert _passes(spec, expected, _softmax_ce_online(z, t, g))
        assert not any(_passes(spec, expected, wrong) for wrong in _wrong(expected, z.shape[0]))
