"""Can the spec's own reference meet its tolerance? Its output against the same model run in fp64.

A kernel is judged against the reference at the spec's dtype, so it passes only if its rounding stays
within atol + rtol * |reference| of the reference's rounding. Where the reference itself misses the
exact (fp64) answer by more than that, as for a sum over 8192 GEMM outputs that nearly cancel
(KernelBench L2/14 at 1e-4), only a kernel that repeats the reference's summation order can pass:
no search finds one, and the right conclusion is about the tolerance, not the kernels.

    python -m kernelevolve.eval.conditioning kernelbench:2/14 --kernelbench-path problems.jsonl \
        --platform h200 --device cpu
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from typing import Any

from kernelevolve.types import KernelSpec, ShapeCase

_CHUNK = 1 << 24


@dataclass(frozen=True)
class Conditioning:
    shape: str
    device: str
    dtype: str
    atol: float
    rtol: float
    elements: int
    out_of_tolerance: int  # reference elements farther than atol + rtol * |exact| from the fp64 run
    max_abs_error: float
    worst_ratio: float  # max of |error| / (atol + rtol * |exact|): above 1, the reference fails itself

    @property
    def reference_meets_tolerance(self) -> bool:
        return self.out_of_tolerance == 0


def reference_against_fp64(spec: KernelSpec, shape: ShapeCase, device: str, seed: int = 0) -> Conditioning:
    """Run `spec`'s reference at its dtype and in fp64 (same parameters and inputs, cast) on `device`."""
    import torch

    from kernelevolve.specs import reference
    from kernelevolve.specs.precision import exact_fp32

    module = reference.load_reference(spec.reference_source)
    reference.apply_shape(module, shape)
    outputs = {}
    for dtype in (reference.torch_dtype(spec.dtype), torch.float64):
        model = reference.build_model(module.Model, module, seed, device, dtype, spec.mode)
        inputs = reference.make_inputs(module, seed, device, dtype)
        with torch.no_grad(), exact_fp32():
            outputs[dtype] = _tensors(model(*inputs))
        del model, inputs
    ours, exact = outputs[reference.torch_dtype(spec.dtype)], outputs[torch.float64]
    if len(ours) != len(exact):
        raise ValueError("the reference returned different structures at its dtype and in fp64")
    elements = out_of_tolerance = 0
    max_abs_error = worst_ratio = 0.0
    for got, want in zip(ours, exact, strict=True):
        got_flat, want_flat = got.reshape(-1), want.reshape(-1)
        elements += got_flat.numel()
        for start in range(0, got_flat.numel(), _CHUNK):
            error = (got_flat[start : start + _CHUNK].double() - want_flat[start : start + _CHUNK]).abs()
            allowed = spec.atol + spec.rtol * want_flat[start : start + _CHUNK].abs()
            finite = torch.isfinite(error)
            error, allowed = error[finite], allowed[finite]
            if error.numel() == 0:
                continue
            out_of_tolerance += int((error > allowed).sum())
            max_abs_error = max(max_abs_error, float(error.max()))
            worst_ratio = max(worst_ratio, float((error / allowed).max()))
    return Conditioning(
        shape.name,
        device,
        spec.dtype,
        spec.atol,
        spec.rtol,
        elements,
        out_of_tolerance,
        max_abs_error,
        worst_ratio,
    )


def _tensors(value: Any) -> list[Any]:
    """The floating tensors of an output, found as the correctness check finds them."""
    from kernelevolve.eval.tensor_guards import _tensor_leaves

    return [t.detach() for t in _tensor_leaves(value) if t.is_floating_point()]


def main(argv: list[str] | None = None) -> int:
    from kernelevolve.platforms import load_platform
    from kernelevolve.specs.loading import resolve_spec

    parser = argparse.ArgumentParser(
        prog="python -m kernelevolve.eval.conditioning",
        description="Does the spec's reference meet its own tolerance against an fp64 run of itself?",
    )
    parser.add_argument("spec", help="shipped name, op.yaml or kernelbench:LEVEL/ID")
    parser.add_argument("--kernelbench-path", default=None)
    parser.add_argument("--platform", default="cpu", help="whose shapes (cpu scales KernelBench sizes down)")
    parser.add_argument("--device", default=None, help="where to run (default: the platform's device)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per shape")
    args = parser.parse_args(argv)
    platform = load_platform(args.platform)
    spec = resolve_spec(args.spec, platform, {"kernelbench": {"path": args.kernelbench_path}}, validate=False)
    device = args.device or ("cuda" if platform.device.startswith("cuda") else platform.device)
    failing = False
    for shape in spec.shapes:
        result = reference_against_fp64(spec, shape, device)
        failing |= not result.reference_meets_tolerance
        if args.json:
            print(
                json.dumps({**asdict(result), "reference_meets_tolerance": result.reference_meets_tolerance})
            )
            continue
        verdict = "meets" if result.reference_meets_tolerance else "MISSES"
        print(
            f"{spec.name} [{shape.name}] on {device}: the {result.dtype} reference {verdict} its tolerance "
            f"(atol {result.atol:g}, rtol {result.rtol:g}) against fp64: {result.out_of_tolerance} of "
            f"{result.elements} elements out, max abs error {result.max_abs_error:.3g}, "
            f"worst error/allowed {result.worst_ratio:.3g}"
        )
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
