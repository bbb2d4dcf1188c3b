"""Every CuTe template kernel: header and tunables, static checks, compile-only on the CPU, GPU correctness.

A template of family F is a complete candidate for the shipped spec F (operators/spec/F.yaml). On the CPU
each one is compiled for sm_90a, through the backend's compile_only, at the spec's CPU shapes and at its
GPU benchmark shapes (inputs are meta tensors, so large shapes cost nothing), in the spec's dtype and in
fp32/bf16. GPU tests (marked `gpu`) run each template against the reference.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from kernelevolve.backends.cute import BACKEND
from kernelevolve.eval.static_checks import check_source
from kernelevolve.platforms import load_platform
from kernelevolve.specs import resolve_spec
from kernelevolve.types import KernelSpec, Status
from kernelevolve.variation.tunables import apply_values, find_tunables

TEMPLATE_DIR = Path(__file__).resolve().parents[1] / "kernelevolve" / "variation" / "templates" / "cute"
HEADER = re.compile(r"^# kernelevolve-template: name=(\S+) family=(\S+) backend=(\S+)\s*$", re.MULTILINE)
TEMPLATES = sorted(TEMPLATE_DIR.glob("*.py"))
FAMILIES = ("elementwise_chain", "softmax", "gemm_bias_relu")
TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2}


def header(path: Path) -> tuple[str, str, str]:
    match = HEADER.search(path.read_text())
    assert match, f"{path.name} lacks the '# kernelevolve-template: name=... family=... backend=cute' line"
    name, family, backend = match.groups()
    return name, family, backend


def shipped_spec(path: Path, platform: str, dtype: str | None = None) -> KernelSpec:
    """The shipped spec of the template's family as `platform` sees it, optionally in another dtype."""
    spec = resolve_spec(header(path)[1], load_platform(platform))
    if dtype is None:
        return spec
    return dataclasses.replace(spec, dtype=dtype, atol=TOLERANCE[dtype], rtol=TOLERANCE[dtype])


def compile_all(source: str, spec: KernelSpec, last_only: bool = False) -> None:
    for shape in spec.shapes[-1:] if last_only else spec.shapes:
        outcome = BACKEND.compile_only(source, spec, shape)
        assert outcome.ok, f"{spec.name} {spec.dtype} {shape}: {outcome.feedback}"
        assert outcome.status is Status.OK and outcome.kernels


def test_there_is_a_template_per_required_family() -> None:
    assert set(FAMILIES) <= {header(path)[1] for path in TEMPLATES}


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_header_and_declared_tunables(path: Path) -> None:
    name, family, backend = header(path)
    assert backend == "cute" and name.startswith("cute_") and family in FAMILIES
    declared = [t for t in find_tunables(path.read_text()) if t.declared]
    assert len(declared) >= 2
    for tunable in declared:
        assert tunable.value in tunable.choices and len(tunable.choices) >= 2


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_passes_backend_and_harness_static_checks(path: Path) -> None:
    source = path.read_text()
    assert BACKEND.static_issues(source) == []
    assert check_source(source, "cute", True) == []


@pytest.mark.parametrize("platform", ["cpu", "h200"])
@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_compiles_at_the_spec_shapes(path: Path, platform: str) -> None:
    pytest.importorskip("cutlass.cute")
    compile_all(path.read_text(), shipped_spec(path, platform))


def supported_dtypes(path: Path) -> tuple[str, ...]:
    """A template's SUPPORTED_DTYPES constant, or every spec dtype when it declares none."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", "") == "SUPPORTED_DTYPES" for t in node.targets
        ):
            return tuple(ast.literal_eval(node.value))
    return tuple(TOLERANCE)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_compiles_in_other_dtypes(path: Path, dtype: str) -> None:
    pytest.importorskip("cutlass.cute")
    if dtype == shipped_spec(path, "cpu").dtype:
        pytest.skip("the spec's own dtype is covered by test_template_compiles_at_the_spec_shapes")
    spec = shipped_spec(path, "cpu", dtype)
    if dtype in supported_dtypes(path):
        compile_all(path.read_text(), spec, last_only=True)  # the ragged CPU shape
        return
    outcome = BACKEND.compile_only(path.read_text(), spec, spec.shapes[-1])
    assert outcome.status is Status.COMPILE_ERROR and dtype.replace("float", "Float") in outcome.feedback


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_tuned_variant_compiles(path: Path) -> None:
    """Every declared tunable moved to another of its choices at once still compiles (the tuner edits these)."""
    pytest.importorskip("cutlass.cute")
    source = path.read_text()
    values = {t.name: next(c for c in t.choices if c != t.value) for t in find_tunables(source) if t.declared}
    variant = apply_values(source, values)
    assert variant != source
    compile_all(variant, shipped_spec(path, "cpu"), last_only=True)


# ----------------------------------------------------------------------------------- GPU


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [None, "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_matches_reference_on_gpu(path: Path, dtype: str | None) -> None:
    """At the spec's small (CPU) shapes, which are ragged on purpose; experiments/cute_gpu_check.py does the big ones."""
    pytest.importorskip("cutlass.cute")
    import torch

    from kernelevolve.eval.reference import apply_shape, build_model, load_reference, make_inputs, torch_dtype

    if dtype is not None and dtype not in supported_dtypes(path):
        pytest.skip(f"{path.stem} does not support {dtype}")
    BACKEND.prepare_process("cuda")
    spec = shipped_spec(path, "cpu", dtype)
    module = BACKEND.load(path.read_text(), f"kernelevolve_test_template_{path.stem}_{spec.dtype}")
    reference = load_reference(spec.reference_source)
    torch_type = torch_dtype(spec.dtype)
    for shape in spec.shapes:
        apply_shape(reference, shape)
        model = build_model(reference.Model, reference, 0, "cuda", torch_type)
        candidate = build_model(module.ModelNew, reference, 0, "cuda", torch_type)
        inputs = make_inputs(reference, 1, "cuda", torch_type)
        with torch.no_grad():
            expected, actual = model(*inputs), candidate(*inputs)
        torch.cuda.synchronize()
        torch.testing.assert_close(actual, expected, atol=spec.atol, rtol=spec.rtol)
