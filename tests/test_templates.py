"""The Triton template library: every template matches its spec's reference, and the library plumbing.

CPU tests run the templates under the Triton interpreter (TRITON_INTERPRET=1, read by triton.jit
when a template module is loaded) at each spec's tiny cpu_shapes, once as shipped and once with
small tunables that force the loops, tails, split paths and multi-tile grids a tiny shape would
otherwise skip. References, models and inputs are built by the harness's own helpers
(`kernelevolve.specs.reference`), so seeding and dtype casts are the harness's.
"""

from __future__ import annotations

import dataclasses
import io
import os
import random
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.specs.traced_families import FAMILIES as TRACED_FAMILIES

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from triton.runtime.interpreter import InterpretedFunction  # noqa: E402

from kernelevolve.backends.triton import TritonBackend  # noqa: E402
from kernelevolve.eval.static.checks import check_source  # noqa: E402
from kernelevolve.paths import SPEC_DIR  # noqa: E402
from kernelevolve.platforms import Platform, load_platform  # noqa: E402
from kernelevolve.search.graph import SearchGraph  # noqa: E402
from kernelevolve.search.interfaces import Operator, ProposalContext  # noqa: E402
from kernelevolve.specs.loading import load_spec_file, shipped_spec_names  # noqa: E402
from kernelevolve.specs.reference import apply_shape, build_model, load_reference, make_inputs, torch_dtype  # noqa: E402
from kernelevolve.types import KernelSpec, ShapeCase  # noqa: E402
from kernelevolve.variation import OPERATORS, OperatorContext  # noqa: E402
from kernelevolve.variation.template_library import (  # noqa: E402
    Template,
    TemplateError,
    load_templates,
    parse_header,
    parse_tunables,
    templates_for,
    tunable_values,
)
from kernelevolve.variation.template_operator import TemplateOperator  # noqa: E402
from kernelevolve.variation.tunables import apply_values  # noqa: E402

# Triton 3.6's interpreter converts 1-element arrays with int(); NumPy 2.3 warns on every loop bound.
pytestmark = pytest.mark.filterwarnings("ignore:Conversion of an array with ndim > 0:DeprecationWarning")

# False when triton was imported before this module without TRITON_INTERPRET (a GPU machine).
INTERPRETED = isinstance(triton.language.standard.cdiv, InterpretedFunction)
TRITON_TEMPLATES = load_templates("triton")
CPU = load_platform("cpu")

# Small tunables per template so the cpu shapes reach the code paths that GPU shapes take:
# looped fallbacks, several chunks per row, split rows, several tiles, K tails, grouped order.
SMALL = {
    "softmax_rowwise": {"MAX_FUSED_SIZE": 128, "LOOP_BLOCK_SIZE": 1024},
    "log_softmax_rowwise": {"MAX_FUSED_SIZE": 128, "LOOP_BLOCK_SIZE": 1024},
    "layernorm_rowwise": {"MAX_FUSED_SIZE": 128, "LOOP_BLOCK_SIZE": 1024},
    "rmsnorm_rowwise": {"MAX_FUSED_SIZE": 128, "LOOP_BLOCK_SIZE": 1024},
    # One SM on the CPU: the shipped value splits rows, 1 takes the one-program-per-row path.
    "softmax_online": {"BLOCK_SIZE": 1024, "PROGRAMS_PER_SM": 1},
    "log_softmax_online": {"BLOCK_SIZE": 1024, "PROGRAMS_PER_SM": 1},
    "layernorm_looped": {"BLOCK_SIZE": 256},
    "rmsnorm_looped": {"BLOCK_SIZE": 256},
    "rmsnorm_train": {"SUM_BLOCK": 128, "NUM_WARPS": 2},  # its backward: tests/test_training.py
    "sum_reduction": {"BLOCK_SIZE": 1024, "COL_BLOCK_R": 8, "COL_BLOCK_I": 16},
    "sum_reduction_split": {"BLOCK_SIZE": 1024, "COL_BLOCK_R": 8, "COL_BLOCK_I": 16},
    "gemm_bias_relu": {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2},
    "gemm_bias_relu_tma": {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2},
    "bmm_tiled": {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2},
    "bmm_tma": {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2},
    "flash_attention": {"BLOCK_M": 16, "BLOCK_N": 16},
    "sdpa_materialized": {
        "S_BLOCK_M": 16,
        "S_BLOCK_N": 16,
        "S_BLOCK_K": 16,
        "O_BLOCK_M": 16,
        "O_BLOCK_N": 16,
        "O_BLOCK_D": 16,
        "SCORES_PER_LAUNCH": 1024,
    },
    "jagged_to_padded": {"BLOCK_L": 4, "BLOCK_D": 32},
    "embedding_bag_sum": {"BLOCK_N": 4, "BLOCK_D": 32},
    "embedding_bag_mean": {"BLOCK_N": 4, "BLOCK_D": 32},
    "embedding_bag_weighted": {"BLOCK_N": 4, "BLOCK_D": 32},
    "segment_mean": {"BLOCK_N": 4, "BLOCK_D": 32, "SCAN_BLOCK": 256},
    "topk_values": {"BLOCK": 256},
    "dot_interaction": {"BLOCK_D": 16},
    "dot_interaction_batched": {"BLOCK_D": 16, "ROWS_PER_PROGRAM": 32},
    "swiglu": {"BLOCK_SIZE": 16},
    "elementwise_chain": {"BLOCK_ROWS": 2, "BLOCK_COLS": 32},
}


def _shipped_specs(platform: Platform) -> dict[str, KernelSpec]:
    return {name: load_spec_file(SPEC_DIR / f"{name}.yaml", platform) for name in shipped_spec_names()}


CPU_SPECS = _shipped_specs(CPU)
PAIRS = [
    (template, spec_name)
    for spec_name, spec in CPU_SPECS.items()
    for template in templates_for(spec, "triton")
]


# ----------------------------------------------------------------------------------- helpers


@pytest.fixture
def interpreter(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run Triton kernels on CPU tensors (NumPy < 2.4: see the pin in pyproject.toml)."""
    if not INTERPRETED:
        pytest.skip(
            "triton was imported in compiled mode (TRITON_INTERPRET unset): interpreter tests need it set"
        )
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    yield


_BACKEND = TritonBackend()
_module_counter = iter(range(1 << 30))


def _load_candidate(template: Template, overrides: Mapping[str, Any]) -> Any:
    source = apply_values(template.source, dict(overrides)) if overrides else template.source
    return _BACKEND.load(source, f"template_test_{template.name}_{next(_module_counter)}")


def _close(expected: Any, got: Any, spec: KernelSpec) -> tuple[bool, str]:
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return False, f"got {tuple(got.shape)} {got.dtype}, expected {tuple(expected.shape)} {expected.dtype}"
    diff = (got.float() - expected.float()).abs()
    ok = bool(torch.allclose(got.float(), expected.float(), atol=spec.atol, rtol=spec.rtol))
    return ok, f"max abs error {diff.max().item() if diff.numel() else 0.0:.3g}"


def check_against_reference(
    template: Template, spec: KernelSpec, shape: ShapeCase, device: str, overrides: Mapping[str, Any] = ()
) -> None:
    """Seeded Model and ModelNew agree on fresh inputs; again after perturbing the parameters.

    The perturbation (copied into ModelNew by a strict load_state_dict, which also checks that
    both create the same parameters) catches kernels that ignore or mix up weights which the
    seeded initialisation leaves at ones and zeros (LayerNorm, RMSNorm).
    """
    dtype = torch_dtype(spec.dtype)
    module = load_reference(spec.reference_source)
    apply_shape(module, shape)
    candidate = _load_candidate(template, dict(overrides))
    reference = build_model(module.Model, module, 0, device, dtype)
    model = build_model(candidate.ModelNew, module, 0, device, dtype)
    where = f"{template.name} on {spec.name}/{shape.name} {dict(overrides)}"
    with torch.no_grad():
        inputs = make_inputs(module, 0, device, dtype)
        ok, detail = _close(reference(*inputs), model(*inputs), spec)
        assert ok, f"{where}: {detail}"
        params = list(reference.parameters())
        if params:
            generator = torch.Generator().manual_seed(1)
            for p in params:
                p.add_((0.5 * torch.randn(p.shape, generator=generator)).to(p.device, p.dtype))
            model.load_state_dict(reference.state_dict())
            inputs = make_inputs(module, 1, device, dtype)
            ok, detail = _close(reference(*inputs), model(*inputs), spec)
            assert ok, f"{where}, perturbed parameters: {detail}"


# ----------------------------------------------------------------------------------- correctness


@pytest.mark.parametrize("config", ["shipped", "small"])
@pytest.mark.parametrize(("template", "spec_name"), PAIRS, ids=[f"{t.name}-{s}" for t, s in PAIRS])
def test_template_matches_reference_on_cpu(
    interpreter: None, template: Template, spec_name: str, config: str
) -> None:
    spec = CPU_SPECS[spec_name]
    overrides = SMALL[template.name] if config == "small" else {}
    for shape in spec.shapes:
        check_against_reference(template, spec, shape, "cpu", overrides)


def _reference_class(spec_name: str) -> Any:
    return load_reference(CPU_SPECS[spec_name].reference_source).Model


def _template(name: str) -> Template:
    return next(t for t in TRITON_TEMPLATES if t.name == name)


# KernelBench level-1 forms beyond the shipped shapes: other dims, N-D inputs, tuple shapes.
GENERAL_CASES = [
    ("softmax_rowwise", "softmax", (), (2, 30, 3)),  # dim=1 of a 3-D input: rows strided by 3
    ("softmax_online", "softmax", (), (2, 300, 3)),
    ("log_softmax_rowwise", "log_softmax", (0,), (37, 5)),  # KernelBench 24 with dim=0
    ("log_softmax_online", "log_softmax", (-1,), (2, 3, 40)),
    ("sum_reduction", "row_sum", (1,), (3, 20, 7)),  # KernelBench 47: middle dim of a 3-D input
    ("sum_reduction_split", "row_sum", (1,), (3, 20, 7)),
    ("layernorm_rowwise", "layernorm", ((4, 6),), (3, 4, 6)),  # KernelBench 40: tuple normalized_shape
    ("layernorm_looped", "layernorm", ((4, 6),), (3, 4, 6)),
    ("rmsnorm_rowwise", "rmsnorm", (24,), (5, 24)),
]


@pytest.mark.parametrize(
    ("name", "spec_name", "init", "shape"), GENERAL_CASES, ids=[c[0] + str(c[3]) for c in GENERAL_CASES]
)
def test_template_generalises_beyond_shipped_shapes(
    interpreter: None, name: str, spec_name: str, init: Sequence[Any], shape: tuple[int, ...]
) -> None:
    candidate = _load_candidate(_template(name), SMALL[name] if "online" in name else {})
    torch.manual_seed(0)
    reference = _reference_class(spec_name)(*init)
    torch.manual_seed(0)
    model = candidate.ModelNew(*init)
    model.load_state_dict(reference.state_dict())
    x = torch.randn(shape)
    with torch.no_grad():
        ok, detail = _close(reference(x), model(x), CPU_SPECS[spec_name])
    assert ok, f"{name} {shape}: {detail}"


# ----------------------------------------------------------------------------------- long sums

LONG_SUM_TEMPLATES = ["sum_reduction", "sum_reduction_split"]
LONG_N = 1 << 18
# 256 chunks per lane, as a 2**20-element row takes at the shipped BLOCK_SIZE of 4096.
LONG_TUNABLES = {"BLOCK_SIZE": LONG_N // 256, "COL_BLOCK_R": LONG_N // 256, "COL_BLOCK_I": 16}


def _cancelling_rows(rows: int, n: int) -> torch.Tensor:
    """randn rows shifted to sum to ~0: atol alone then bounds the error (KernelBench rows do this by chance)."""
    x = torch.randn(rows, n, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return (x - x.mean(dim=1, keepdim=True)).float()


def _plain_lane_sum(x: torch.Tensor, block: int) -> torch.Tensor:
    """Sum of each row the way an fp32 vector accumulator does it: `block` lanes, then a pairwise tree."""
    lanes = torch.zeros(x.shape[0], block, dtype=torch.float32)
    for chunk in x.view(x.shape[0], -1, block).unbind(1):
        lanes += chunk
    while lanes.shape[1] > 1:
        lanes = lanes[:, 0::2] + lanes[:, 1::2]
    return lanes


@pytest.mark.parametrize("dim", [1, 0], ids=["rows", "columns"])
@pytest.mark.parametrize("name", LONG_SUM_TEMPLATES)
def test_sum_templates_are_exact_on_long_cancelling_rows(interpreter: None, name: str, dim: int) -> None:
    """Against float64, not torch's fp32 sum: fp32 lanes miss atol 1e-4 here (H200, row_sum at 2**20 columns)."""
    x = _cancelling_rows(3, LONG_N)
    exact = x.double().sum(dim=1, keepdim=True)
    plain_error = float((_plain_lane_sum(x, LONG_TUNABLES["BLOCK_SIZE"]).double() - exact).abs().max())
    assert plain_error > 1e-4, f"the data no longer defeats plain fp32 lanes ({plain_error:.3g})"
    model = _load_candidate(_template(name), LONG_TUNABLES).ModelNew(dim)
    with torch.no_grad():
        got = model(x if dim == 1 else x.T.contiguous())
    got = got if dim == 1 else got.T
    error = float((got.double() - exact).abs().max())
    # The sums are ~1e-5; one fp32 rounding of them is ~1e-12.
    assert error < 1e-9, f"{name} dim={dim}: max abs error {error:.3g} against float64"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy, interpreting inf - inf and the overflow
@pytest.mark.parametrize("name", LONG_SUM_TEMPLATES)
def test_sum_templates_keep_torch_sum_non_finite_results(interpreter: None, name: str) -> None:
    """inf, inf - inf, NaN and fp32 overflow come out as torch.sum has them (the TwoSum error term is NaN there)."""
    x = torch.randn(5, 3000, generator=torch.Generator().manual_seed(0))
    x[0, 3] = float("inf")
    x[1, 2999] = float("nan")
    x[2, 1], x[2, 2000] = float("inf"), float("-inf")
    x[3, 7], x[3, 1500] = 3e38, 3e38
    model = _load_candidate(_template(name), {"BLOCK_SIZE": 256}).ModelNew(1)
    with torch.no_grad():
        got, expected = model(x), x.sum(dim=1, keepdim=True)
    assert torch.equal(got.isnan(), expected.isnan())
    assert torch.equal(got.nan_to_num(0.0)[:4], expected.nan_to_num(0.0)[:4]), (got, expected)
    assert torch.allclose(got[4], expected[4], atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available() or INTERPRETED, reason="needs a CUDA GPU and compiled Triton"
)
@pytest.mark.parametrize(("template", "spec_name"), PAIRS, ids=[f"{t.name}-{s}" for t, s in PAIRS])
def test_template_matches_reference_on_gpu(
    monkeypatch: pytest.MonkeyPatch, template: Template, spec_name: str
) -> None:
    """Compiled on the GPU at the spec's first benchmark shape (GPU-sized)."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    spec = _shipped_specs(load_platform("h200"))[spec_name]
    check_against_reference(template, spec, spec.shapes[0], "cuda")


# ----------------------------------------------------------------------------------- library


# The shipped forward specs with a template of ours; the model suite's others start from compiler seeds.
TEMPLATED_SPECS = {
    "batched_gemm",
    "dot_interaction",
    "elementwise_chain",
    "embedding_bag_mean",
    "embedding_bag_sum",
    "gemm_bias_relu",
    "jagged_mean",
    "jagged_to_padded_dense",
    "layernorm",
    "log_softmax",
    "rmsnorm",
    "row_sum",
    "sdpa",
    "softmax",
    "swiglu",
    "topk_retrieval",
    "weighted_embedding_bag",
}


def test_the_templated_specs_have_a_triton_template_and_every_template_a_spec() -> None:
    served = {spec_name for _, spec_name in PAIRS}
    # training specs are served only training templates (RMSNorm's so far); the others' seeds are
    # torch.compile's forward and backward (tests/test_training_seed.py)
    assert served - {n for n in served if CPU_SPECS[n].backward is not None} == TEMPLATED_SPECS, (
        f"specs without a template: {sorted(TEMPLATED_SPECS - served)}"
    )
    assert "train_rmsnorm" in served
    used = {t.name for t, _ in PAIRS}
    # Templates of families no shipped spec is an instance of (argmax, scans, pooling) are checked against
    # the KernelBench references in tests/test_kb_templates.py.
    kernelbench_only = {t.name for t in TRITON_TEMPLATES if t.family in TRACED_FAMILIES} - used
    assert used == {t.name for t in TRITON_TEMPLATES} - kernelbench_only
    assert set(SMALL) == used, "every template needs small tunables in SMALL"


def test_templates_pass_the_harness_static_checks() -> None:
    for template in TRITON_TEMPLATES:
        issues = check_source(template.source, "triton", strict=True) + _BACKEND.static_issues(
            template.source
        )
        assert issues == [], f"{template.name}: {issues}"


def test_loader_reads_headers_and_backend_folders() -> None:
    everything = load_templates()
    assert {t.backend for t in everything} >= {"triton"}
    assert len({(t.backend, t.name) for t in everything}) == len(everything)
    for template in everything:
        header = parse_header(template.source) or {}
        assert {k: header[k] for k in ("name", "family", "backend")} == {
            "name": template.name,
            "family": template.family,
            "backend": template.backend,
        }
        assert set(header) <= {"name", "family", "backend", "seed_precisions", "training"}
    assert [t for t in everything if t.backend == "triton"] == TRITON_TEMPLATES
    assert all(t.backend == "cute" for t in load_templates("cute"))
    with pytest.raises(ValueError, match="triton"):
        load_templates("no_such_backend")


def test_parse_header_rejects_malformed_headers() -> None:
    assert parse_header("import torch\n") is None
    with pytest.raises(TemplateError, match="family"):
        parse_header("# kernelevolve-template: name=x backend=triton\n")
    with pytest.raises(TemplateError, match="key=value"):
        parse_header("# kernelevolve-template: name=x family family=y backend=triton\n")


def _tune_comment_count(source: str) -> int:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return sum(1 for t in tokens if t.type == tokenize.COMMENT and t.string.lstrip("# ").startswith("tune:"))


def test_parse_tunables_finds_every_declared_tunable_of_every_template() -> None:
    for template in TRITON_TEMPLATES:
        tunables = parse_tunables(template.source)
        assert tunables == template.tunables
        assert len(tunables) == _tune_comment_count(template.source) > 0, template.name
        for name, value in tunable_values(template.source).items():
            assert value in tunables[name], f"{template.name}.{name}={value!r} not in {tunables[name]}"


def test_parse_tunables_reads_only_module_level_tune_comments() -> None:
    source = (
        'BLOCK = 64  # tune: 32, 64, 128\nMODE = "a"  # tune: "a", "b"\nPLAIN = 3\n'
        "def f():\n    INNER = 4  # tune: 4, 8\n    return INNER\n"
    )
    assert parse_tunables(source) == {"BLOCK": (32, 64, 128), "MODE": ("a", "b")}
    assert tunable_values(source) == {"BLOCK": 64, "MODE": "a"}


def test_templates_for_matches_the_traced_program_and_declared_tags_never_the_name() -> None:
    softmax = CPU_SPECS["softmax"]
    assert {t.name for t in templates_for(softmax, "triton")} == {"softmax_rowwise", "softmax_online"}
    assert {t.name for t in templates_for(CPU_SPECS["row_sum"], "triton")} == {
        "sum_reduction",
        "sum_reduction_split",
    }
    untagged = KernelSpec(name="my_op", reference_source=softmax.reference_source, shapes=softmax.shapes)
    assert {t.name for t in templates_for(untagged, "triton")} == {"softmax_rowwise", "softmax_online"}
    relu = softmax.reference_source.replace("torch.softmax(x, dim=1)", "torch.relu(x)")
    assert relu != softmax.reference_source
    named = KernelSpec(name="softmax", reference_source=relu)
    assert templates_for(named, "triton") == []  # a name is no program
    declared = KernelSpec(name="my_op", reference_source=relu, tags=("softmax", "rowwise"))
    assert {t.name for t in templates_for(declared, "triton")} == {"softmax_rowwise", "softmax_online"}
    assert all(t.backend == "cute" for t in templates_for(softmax, "cute"))


def test_every_shipped_spec_but_one_gets_its_templates_from_its_traced_program() -> None:
    """The shipped specs' tags name their families too; the trace finds them without (all but the jagged
    gather, whose program is a dozen index computations over the offsets)."""
    for name, spec in CPU_SPECS.items():
        untagged = dataclasses.replace(spec, name="op", tags=())
        found = {t.name for backend in ("triton", "cute") for t in templates_for(untagged, backend)}
        wanted = {t.name for backend in ("triton", "cute") for t in templates_for(spec, backend)}
        assert found == (set() if name == "jagged_to_padded_dense" else wanted), name


def _context(spec: KernelSpec, graph: SearchGraph, backends: tuple[str, ...]) -> ProposalContext:
    return ProposalContext(
        spec=spec, platform=CPU, graph=graph, parents=(), rng=random.Random(0), backends=backends
    )


def test_template_operator_seeds_each_matching_template_once() -> None:
    operator = OPERATORS.create("template", context=OperatorContext())
    assert isinstance(operator, TemplateOperator) and isinstance(operator, Operator)
    assert (operator.name, operator.arity) == ("template", 0)
    graph = SearchGraph()
    spec = CPU_SPECS["layernorm"]
    seeds = operator.propose(_context(spec, graph, ("triton",)))
    assert {c.metadata["template"] for c in seeds} == {"layernorm_rowwise", "layernorm_looped"}
    for candidate in seeds:
        template = _template(candidate.metadata["template"])
        assert (candidate.operator, candidate.mode, candidate.backend) == ("template", "seed", "triton")
        assert candidate.parent_ids == () and candidate.source == template.source
        assert candidate.metadata["params"] == template.params and candidate.metadata["params"]
        assert graph.add_candidate(candidate)
    assert operator.propose(_context(spec, graph, ("triton",))) == []
    assert operator.propose(_context(spec, SearchGraph(), ())) == []


def test_on_a_gpu_platform_attention_templates_also_seed_one_tf32_pass() -> None:
    """sdpa's templates declare `seed_precisions=tf32`: on GPU platforms each comes with a twin whose
    FP32_PRECISION is one TF32 pass (its own is tf32x3); on the CPU, whose interpreter computes fp32 dots
    exactly at any precision, no twin. Other templates get none."""
    from dataclasses import replace

    operator = TemplateOperator()
    spec = CPU_SPECS["sdpa"]
    on_cpu = operator.propose(_context(spec, SearchGraph(), ("triton",)))
    gpu_context = replace(_context(spec, SearchGraph(), ("triton",)), platform=load_platform("h200"))
    on_gpu = operator.propose(gpu_context)
    assert len(on_gpu) == 2 * len(on_cpu) and all("fp32_precision" not in c.metadata for c in on_cpu)
    twins = [c for c in on_gpu if c.metadata.get("fp32_precision") == "tf32"]
    assert {c.metadata["template"] for c in twins} == {c.metadata["template"] for c in on_cpu}
    for twin in twins:
        assert (
            twin.metadata["params"]["FP32_PRECISION"]
            == "tf32"
            == tunable_values(twin.source)["FP32_PRECISION"]
        )
    assert _template("sdpa_materialized").seed_precisions == ("tf32",)
    assert _template("layernorm_rowwise").seed_precisions == ()
    layernorm = replace(
        _context(CPU_SPECS["layernorm"], SearchGraph(), ("triton",)), platform=load_platform("h200")
    )
    assert len(operator.propose(layernorm)) == 2  # its two templates, no twins


def test_template_source_files_are_package_data_beside_the_loader() -> None:
    folder = Path(__file__).resolve().parents[1] / "kernelevolve" / "variation" / "templates" / "triton"
    names = {p.stem for p in folder.glob("*.py") if not p.name.startswith("_")}
    variants = {t.name for t in TRITON_TEMPLATES if t.name not in names}
    assert names <= {t.name for t in TRITON_TEMPLATES}
    # cumsum_dim.py serves the other scans, argmax_dim.py argmin, max_dim.py min, the sums the means,
    # l2norm_dim1.py the L1 norm, embedding_bag_sum.py the mean bag
    assert variants == {
        "embedding_bag_mean",
        "cumprod_dim",
        "cumsum_reverse_dim",
        "cumsum_exclusive_dim",
        "argmin_dim",
        "min_dim",
        "mean_dim",
        "mean_dim_split",
        "l1norm_dim1",
    }
    assert os.path.isfile(folder.parent / "__init__.py")


def test_variant_lines_expand_into_complete_templates() -> None:
    from kernelevolve.variation.template_library import TemplateError, _expand_variants

    source = (
        "# kernelevolve-template: name=scan family=scan backend=triton\n"
        "# kernelevolve-variant: name=rscan family=rscan REVERSE=True\n"
        "REVERSE = False\nBLOCK = 64  # tune: 32, 64\n"
    )
    header = {"name": "scan", "family": "scan", "backend": "triton"}
    (base_header, base), (variant_header, variant) = _expand_variants(source, header, "t")
    assert base_header == header and "variant" not in base and "REVERSE = False" in base
    assert variant_header == {"name": "rscan", "family": "rscan", "backend": "triton"}
    assert variant.startswith("# kernelevolve-template: name=rscan family=rscan backend=triton\n")
    assert (
        "REVERSE = True" in variant and "variant" not in variant and "BLOCK = 64  # tune: 32, 64" in variant
    )
    with pytest.raises(TemplateError, match="MISSING"):
        _expand_variants(source.replace("REVERSE=True", "MISSING=1"), header, "t")
