"""The README's Python API on the CPU, step by step: optimise a module; use the winner at a searched
shape and at one never searched; use it as a custom op under torch.compile(fullgraph=True), checked
by torch.library.opcheck; find it again in the artifact store.

    python examples/python_api.py            # a few minutes on two CPU cores
    python examples/python_api.py --quick    # fewer harness trials, no torch.compile baseline (the test)

No TRITON_INTERPRET to set: on a machine without a GPU the winner's Triton runs under the interpreter.
"""

from __future__ import annotations

import sys

import torch
import torch.nn as nn

import kernelevolve

QUICK = (
    "kb.enabled=false",
    "platform.eval.timing_trials=2",
    "platform.eval.correctness_trials=2",
    "platform.eval.warmup_trials=1",
    "platform.eval.measure_compile_baseline=false",
)


class Norm(nn.Module):
    """RMSNorm over the last dimension, with a learned scale."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * self.weight


def main(quick: bool = False) -> None:
    torch.manual_seed(0)
    norm = Norm(64)
    result = kernelevolve.optimize(
        norm,
        torch.randn(8, 64),
        budget=4,
        operators=["fusion_seed", "tune"],
        overrides=QUICK if quick else (),
    )
    print(f"best {result.best_id}: {result.speedup_vs_eager:.3g}x vs eager; run {result.run_dir}")

    fast = result.as_module()  # the winning ModelNew, with norm's weights
    for rows in (8, 5):  # the searched shape, then one never searched
        x = torch.randn(rows, 64)
        torch.testing.assert_close(fast(x), norm(x))
    print("as_module paths:", list(fast.kernelevolve_dispatcher.calls))

    op = result.custom_op()  # kernelevolve::norm(Tensor x, Tensor weight, *, int config=0) -> Tensor
    compiled = torch.compile(op.wrap(norm), fullgraph=True)
    x = torch.randn(8, 64)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), norm(x))
    torch.library.opcheck(op.op, (x, norm.weight))  # raises on a failed test
    print(f"custom op {op.schema}: paths {dict(op.counts)}; opcheck passed")

    stored = kernelevolve.lookup(result.spec, "cpu")  # optimize() recorded the winners in the store
    assert stored is not None and stored.candidate_id == result.best_id
    print(f"lookup: {stored.spec_name} on {stored.platform}, candidate {stored.candidate_id}")


if __name__ == "__main__":  # evaluation workers are spawned and re-import this file: keep the guard
    main(quick="--quick" in sys.argv[1:])
