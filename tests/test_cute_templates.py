"""Every CuTe template kernel: header and tunables, static checks, compile-only on the CPU, GPU correctness.

A template of family F is a complete candidate for the shipped spec F (operators/spec/F.yaml). On the CPU
each one is compiled for sm_90a, through the backend's compile_only, at the spec's CPU shapes and at its
GPU benchmark shapes (inputs are meta tensors, so large shapes cost nothing), in the spec's dtype and in
fp32/bf16. The softmax template is also compiled at the H200 shapes in a child with a time limit, and
every template's PTX at those shapes is checked for warp/block collectives that only some lanes reach (a
GPU hang). GPU tests (marked `gpu`) run each template against the reference.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelevolve.backends.cute import BACKEND, _dsl, _meta_inputs
from kernelevolve.eval.static.checks import check_source
from kernelevolve.platforms import load_platform
from kernelevolve.specs.loading import resolve_spec
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


# ----------------------------------------------------------------------------------- softmax on H200

SOFTMAX = TEMPLATE_DIR / "softmax.py"
SOFTMAX_EXTREMES = [  # the tunables' corners: most unrolled register chunks, narrowest vectors, widest blocks
    {},
    {"THREADS": 128, "VEC_BYTES": 4, "MAX_REGISTER_CHUNKS": 32},
    {"THREADS": 128, "VEC_BYTES": 16, "MAX_REGISTER_CHUNKS": 32},
    {"THREADS": 1024, "VEC_BYTES": 4, "MAX_REGISTER_CHUNKS": 4},
]
COMPILE_BOUND_S = 30.0  # per shape; measured 0.1-0.3 s on a 2-core CPU, so only a blow-up comes near
_COMPILE_TIMES = """
import json, sys
from pathlib import Path
from kernelevolve.backends.cute import BACKEND
from kernelevolve.platforms import load_platform
from kernelevolve.specs.loading import resolve_spec
from kernelevolve.variation.tunables import apply_values

spec = resolve_spec("softmax", load_platform("h200"))
source = Path(sys.argv[1]).read_text()
times = {}
for values in json.loads(sys.argv[2]):
    variant = apply_values(source, values) if values else source
    for shape in spec.shapes:
        outcome = BACKEND.compile_only(variant, spec, shape, arch="sm_90a")
        assert outcome.ok, f"{values} {shape.name}: {outcome.feedback}"
        times[f"{values} {shape.name}"] = outcome.seconds
print(json.dumps(times))
"""


def test_softmax_compiles_in_bounded_time_at_every_h200_shape() -> None:
    """In a child with a time limit, so a compile that hangs fails the test instead of stalling the suite."""
    pytest.importorskip("cutlass.cute")
    done = subprocess.run(
        [sys.executable, "-c", _COMPILE_TIMES, str(SOFTMAX), json.dumps(SOFTMAX_EXTREMES)],
        capture_output=True,
        text=True,
        timeout=60 + COMPILE_BOUND_S * len(SOFTMAX_EXTREMES) * 4,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    times = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(times) == len(SOFTMAX_EXTREMES) * len(shipped_spec(SOFTMAX, "h200").shapes)
    slow = {case: seconds for case, seconds in times.items() if seconds > COMPILE_BOUND_S}
    assert not slow, slow


_COLLECTIVE = re.compile(
    r"\b(shfl\.sync|vote\.sync|match\.sync|redux\.sync|bar\.warp\.sync|bar\.sync|barrier\.)"
)
_LABEL = re.compile(r"^(\$\w+):")
_FORWARD_IF = re.compile(r"^@!?%p\d+\s+bra\s+(\$\w+);")  # bra.uni (a branch known uniform) is not matched


def divergent_collectives(ptx: str) -> list[str]:
    """Warp/block collectives between a conditional forward branch and its target: lanes that branch skip them.

    A shfl.sync with mask -1 or a bar.sync that some lanes skip is undefined and can deadlock the kernel.
    Conservative: a branch on a warp-uniform predicate (if warp == 0: ...) is flagged too.
    """
    lines = [line.strip() for line in ptx.splitlines()]
    labels = {m.group(1): i for i, line in enumerate(lines) if (m := _LABEL.match(line))}
    found = []
    for i, line in enumerate(lines):
        match = _FORWARD_IF.match(line)
        end = labels.get(match.group(1), -1) if match else -1
        found += [f"line {j + 1}: {lines[j]}" for j in range(i + 1, end) if _COLLECTIVE.search(lines[j])]
    return found


@pytest.fixture
def keep_ptx(tmp_path: Path) -> Iterator[None]:
    """Compile for sm_90a and keep each kernel's PTX (compiled.__ptx__) for the duration of a test."""
    pytest.importorskip("cutlass.cute")
    envar = _dsl().envar
    saved = (envar.arch, envar.keep_ptx, envar.dump_dir)
    envar.arch, envar.keep_ptx, envar.dump_dir = "sm_90a", True, str(tmp_path)
    yield
    envar.arch, envar.keep_ptx, envar.dump_dir = saved


def h200_ptx(path: Path, source: str, module_name: str) -> dict[str, str]:
    """PTX of every kernel the template compiles at each H200 shape, keyed "shape/kernel"."""
    import torch

    spec = shipped_spec(path, "h200")
    module = BACKEND.load(source, module_name)
    ptx = {}
    for shape in spec.shapes:
        init_inputs, inputs, dtype = _meta_inputs(spec, shape)
        with torch.device("meta"):
            model = module.ModelNew(*init_inputs)
        with torch.no_grad():
            compiled = model.to(dtype=dtype).eval().compile_kernels(*inputs)
        ptx.update({f"{shape.name}/{name}": fn.__ptx__ for name, fn in compiled.items()})
    return ptx


@pytest.mark.usefixtures("keep_ptx")
@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_no_collective_runs_on_a_subset_of_lanes(path: Path) -> None:
    for kernel, ptx in h200_ptx(path, path.read_text(), f"kernelevolve_test_ptx_{path.stem}").items():
        assert ptx, kernel
        assert divergent_collectives(ptx) == [], kernel


@pytest.mark.usefixtures("keep_ptx")
def test_the_lane_check_catches_the_old_softmax_hang() -> None:
    """The block reduce once read warp_idx() (a full-warp shfl.sync) inside `if lane_idx() == 0`: one lane
    in a full-mask shuffle, the others waiting at the barrier after it, a likely GPU hang at every shape."""
    source = SOFTMAX.read_text()
    fixed = (
        "    warp = cute.arch.warp_idx()\n    if cute.arch.lane_idx() == 0:\n        buffer[warp] = value\n"
    )
    assert fixed in source
    broken = source.replace(
        fixed, "    if cute.arch.lane_idx() == 0:\n        buffer[cute.arch.warp_idx()] = value\n"
    )
    ptx = h200_ptx(SOFTMAX, broken, "kernelevolve_test_ptx_softmax_broken")
    assert len(ptx) == len(shipped_spec(SOFTMAX, "h200").shapes)
    for kernel, text in ptx.items():
        assert any("shfl.sync.idx" in hit for hit in divergent_collectives(text)), kernel


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

    from kernelevolve.specs.reference import (
        apply_shape,
        build_model,
        load_reference,
        make_inputs,
        torch_dtype,
    )

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
