"""Family templates for KernelBench level-1 problems our fusion compiler does not cover.

Sum, mean, max and min over a dim (47, 48, 49, 53), argmax/argmin over a dim (51, 52), the cumsum family (89-92), 1D/2D/3D max/avg pooling (41-46), the batched matmul (3), log-softmax (24) and layer norm (40):
each problem is tagged with its template's family, finds the template, and the template
matches the reference (fp32, 1e-4) at its CPU-scaled size and at other sizes and constructor
arguments under the Triton interpreter. One problem also goes through the real harness.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")


from kernelevolve.backends.triton import TritonBackend  # noqa: E402
from kernelevolve.bench.kernelbench.problems import (  # noqa: E402
    Problem,
    load_problem,
    problem_tags,
    problem_to_spec,
    scale_for_cpu,
)
from kernelevolve.eval.harness import evaluate  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from kernelevolve.specs.reference_module import load_reference_module  # noqa: E402
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, Status  # noqa: E402
from kernelevolve.variation.template_library import Template, templates_for  # noqa: E402
from kernelevolve.variation.tunables import apply_values, find_tunables  # noqa: E402
from tests.kernelbench_data import KERNELBENCH, needs_kernelbench  # noqa: E402

# Triton 3.6's interpreter converts 1-element arrays with int(); NumPy 2.3 warns on every loop bound.
pytestmark = pytest.mark.filterwarnings("ignore:Conversion of an array with ndim > 0:DeprecationWarning")

CPU_BUDGET = 4096

# problem id -> (family, [(size constants, constructor args or None for the problem's, tunables)]).
# The second case changes sizes (odd, non-power-of-two) and, where the reference takes them, dims
# and window parameters; small tunables force several chunks, partial chunks and several programs.
CASES: dict[int, tuple[str, list[tuple[dict[str, Any], list[Any] | None, dict[str, Any]]]]] = {
    # KernelBench reduces dim 1 of (128, 4096, 4095); also the last dim and dim 0, long enough for chunks.
    47: ("sum_reduction", [({"batch_size": 3, "dim1": 37, "dim2": 5}, None, {"COL_BLOCK_R": 8, "COL_BLOCK_I": 4}),
                           ({"batch_size": 3, "dim1": 6, "dim2": 75}, [-1], {"BLOCK_SIZE": 16})]),
    48: ("mean_dim", [({"batch_size": 3, "dim1": 37, "dim2": 5}, None, {"COL_BLOCK_R": 8, "COL_BLOCK_I": 4}),
                      ({"batch_size": 5, "dim1": 7, "dim2": 3}, [0], {"COL_BLOCK_R": 4}),
                      ({"batch_size": 3, "dim1": 6, "dim2": 75}, [2], {"BLOCK_SIZE": 16})]),
    49: ("max_dim", [({"batch_size": 3, "dim1": 37, "dim2": 5}, None, {"COL_BLOCK_R": 8, "COL_BLOCK_I": 4}),
                     ({"batch_size": 3, "dim1": 6, "dim2": 75}, [-1], {"BLOCK_SIZE": 16, "ROWS_PER_PROGRAM": 2})]),
    53: ("min_dim", [({"batch_size": 5, "dim1": 7, "dim2": 3}, [0], {"COL_BLOCK_R": 4}),
                     ({"batch_size": 3, "dim1": 6, "dim2": 75}, [2], {"BLOCK_SIZE": 16})]),
    # 2048 x 1048576 in KernelBench: split K (forced, and an uneven last split), rows past the last block.
    4: ("matvec", [({"M": 5, "K": 3000}, None, {"BLOCK_K": 256, "SPLIT_K": 3}),
                   ({"M": 37, "K": 100}, None, {"BLOCK_M": 8, "BLOCK_K": 32, "SPLIT_K": 1}),
                   ({"M": 3, "K": 700}, None, {"BLOCK_K": 64, "PROGRAMS_PER_SM": 8})]),
    # Rows of 65535 in KernelBench; odd lengths, several chunks, more rows than persistent programs.
    38: ("l1norm_dim1", [({"batch_size": 5, "dim": 37}, None, {"BLOCK_SIZE": 16, "PROGRAMS_PER_SM": 1}),
                       ({"batch_size": 2, "dim": 300}, None, {"BLOCK_SIZE": 64})]),
    39: ("l2norm_dim1", [({"batch_size": 5, "dim": 37}, None, {"BLOCK_SIZE": 16, "PROGRAMS_PER_SM": 1}),
                       ({"batch_size": 2, "dim": 300}, None, {"BLOCK_SIZE": 64})]),
    51: ("argmax_dim", [({"batch_size": 3, "dim1": 37, "dim2": 5}, None, {"COL_BLOCK": 8, "COL_LANES": 4}),
                        ({"batch_size": 3, "dim1": 6, "dim2": 75}, [-1], {"BLOCK_SIZE": 16})]),
    52: ("argmin_dim", [({"batch_size": 5, "dim1": 7, "dim2": 3}, [0], {"COL_BLOCK": 4}),
                        ({"batch_size": 3, "dim1": 6, "dim2": 75}, [2], {"BLOCK_SIZE": 16})]),
    89: ("cumsum_dim", [({"batch_size": 3, "input_shape": (50, 7)}, None, {"COL_BLOCK": 8}),
                        ({"batch_size": 4, "input_shape": (301,)}, None, {"BLOCK_SIZE": 64})]),
    90: ("cumprod_dim", [({"batch_size": 3, "input_shape": (20, 7)}, [0], {"COL_BLOCK": 4}),
                         ({"batch_size": 4, "input_shape": (45,)}, None, {"BLOCK_SIZE": 16})]),
    91: ("cumsum_reverse_dim", [({"batch_size": 3, "input_shape": (50, 7)}, None, {"COL_BLOCK": 8}),
                                ({"batch_size": 4, "input_shape": (301,)}, [-1], {"BLOCK_SIZE": 64})]),
    92: ("cumsum_exclusive_dim", [({"batch_size": 3, "input_shape": (50, 7)}, None, {"COL_BLOCK": 8}),
                                  ({"batch_size": 4, "input_shape": (301,)}, None, {"BLOCK_SIZE": 64})]),
    41: ("max_pool1d", [({"batch_size": 2, "features": 3, "sequence_length": 37}, [4, 2, 2, 2, True], {}),
                        ({"batch_size": 2, "features": 5, "sequence_length": 50}, [3, None, 1, 1, False],
                         {"BLOCK_SIZE": 32})]),
    42: ("max_pool2d", [({"batch_size": 2, "channels": 3, "height": 13, "width": 10}, [3, 2, 1, 2], {}),
                        ({"batch_size": 1, "channels": 2, "height": 9, "width": 14}, [(2, 3), (1, 2), (1, 0), (2, 1)],
                         {"BLOCK_SIZE": 32})]),
    44: ("avg_pool1d", [({"batch_size": 2, "in_channels": 3, "input_length": 29}, [5, 3, 2], {}),
                        ({"batch_size": 3, "in_channels": 2, "input_length": 40}, [4, None, 0], {"BLOCK_SIZE": 16})]),
    45: ("avg_pool2d", [({"batch_size": 2, "channels": 3, "height": 23, "width": 17}, [3, None, 1], {}),
                        ({"batch_size": 1, "channels": 2, "height": 11, "width": 15}, [(3, 4), (2, 3), (1, 2)],
                         {"BLOCK_SIZE": 32})]),
    # Dilated and ceil-mode windows partly in the padding or past the input; indices; per-dim tuples.
    43: ("max_pool3d", [({"batch_size": 2, "channels": 3, "dim1": 9, "dim2": 8, "dim3": 11},
                         [3, 2, 1, 3, False, True], {"BLOCK_SIZE": 64}),
                        ({"batch_size": 1, "channels": 2, "dim1": 7, "dim2": 9, "dim3": 10},
                         [(3, 2, 2), (2, 1, 3), (1, 0, 1), (2, 1, 1), True, True], {"BLOCK_SIZE": 32}),
                        ({"batch_size": 2, "channels": 2, "dim1": 6, "dim2": 5, "dim3": 7},
                         [2, None, 1, 1, True, False], {"BLOCK_SIZE": 16})]),
    # Recognised from the traced program; served before only as the shipped batched_gemm, log_softmax and
    # layernorm specs: odd sizes, blocks smaller than the sizes, another dim, other normalized shapes.
    3: ("batched_gemm", [({"batch_size": 2, "m": 37, "k": 50, "n": 9}, None, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}),
                         ({"batch_size": 3, "m": 20, "k": 24, "n": 40}, None, {})]),
    24: ("log_softmax", [({"batch_size": 5, "dim": 37}, None, {"MAX_FUSED_SIZE": 16, "LOOP_BLOCK_SIZE": 16, "BLOCK_SIZE": 16}),
                         ({"batch_size": 7, "dim": 30}, [0], {"ROWS_PER_PROGRAM": 2})]),
    40: ("layernorm", [({"batch_size": 2, "features": 3, "dim1": 5, "dim2": 7}, None, {"MAX_FUSED_SIZE": 64, "LOOP_BLOCK_SIZE": 32, "BLOCK_SIZE": 32}),
                       ({"batch_size": 2, "features": 3, "dim1": 5, "dim2": 7}, [(5, 7)], {})]),
    46: ("avg_pool3d", [({"batch_size": 2, "channels": 3, "depth": 7, "height": 8, "width": 9}, [3, 2, 1],
                         {"BLOCK_SIZE": 64}),
                        ({"batch_size": 1, "channels": 2, "depth": 9, "height": 6, "width": 7},
                         [(3, 2, 4), (2, 1, 3), (1, 0, 2)], {"BLOCK_SIZE": 32})]),
}  # fmt: skip

_BACKEND = TritonBackend()
_counter = iter(range(1 << 30))


def _problem(problem_id: int) -> Problem:
    return load_problem(KERNELBENCH, 1, problem_id)


def _family_templates(problem: Problem, family: str) -> list[Template]:
    return [t for t in templates_for(problem_to_spec(problem), "triton") if t.family == family]


def _template(problem: Problem, family: str) -> Template:
    found = _family_templates(problem, family)
    assert len(found) == 1, f"{problem.name}: templates of {family}: {[t.name for t in found]}"
    return found[0]


def _own(template: Template, tunables: dict[str, Any]) -> dict[str, Any]:
    """The tunables this template has (the split twins have no ROWS_PER_PROGRAM, for one)."""
    names = {t.name for t in find_tunables(template.source)}
    return {k: v for k, v in tunables.items() if k in names}


def _flat(value: Any) -> list[Any]:
    return [t for v in value for t in _flat(v)] if isinstance(value, (tuple, list)) else [value]


def _compare(problem: Problem, template: Template, constants: dict[str, Any], init: list[Any] | None,
             tunables: dict[str, Any], inputs: list[Any] | None = None) -> None:  # fmt: skip
    module = load_reference_module(problem.code, constants)
    candidate = _BACKEND.load(apply_values(template.source, tunables), f"kb_template_{next(_counter)}")
    args = module.get_init_inputs() if init is None else init
    torch.manual_seed(0)
    reference = module.Model(*args)
    torch.manual_seed(0)
    model = candidate.ModelNew(*args)
    if inputs is None:
        torch.manual_seed(1)
        inputs = module.get_inputs()
    where = f"{template.name} {constants} init={args} {tunables}"
    with torch.no_grad():
        expected, got = _flat(reference(*inputs)), _flat(model(*inputs))
    assert len(expected) == len(got), where
    for e, g in zip(expected, got, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype, (
            f"{where}: got {g.shape} {g.dtype}, want {e.shape} {e.dtype}"
        )
        assert torch.allclose(g.double(), e.double(), atol=1e-4, rtol=1e-4), (
            f"{where}: max abs error {(g.double() - e.double()).abs().max().item():.3g}"
        )


@needs_kernelbench
@pytest.mark.parametrize("problem_id", sorted(CASES))
def test_template_matches_kernelbench_problem(interpreter: None, problem_id: int) -> None:
    family, cases = CASES[problem_id]
    problem = _problem(problem_id)
    assert family in problem_tags(problem)
    templates = _family_templates(problem, family)  # the sums and means have a split-row twin each
    assert templates, f"{problem.name}: no template of {family}"
    scaled = scale_for_cpu(problem_to_spec(problem), CPU_BUDGET)
    assert scaled.scaling, f"{problem.name} was not scaled for the CPU"
    constants = dict(scaled.shapes[0].params)
    for template in templates:
        _compare(problem, template, constants, None, {})
        for sizes, init, tunables in cases:
            _compare(problem, template, sizes, init, _own(template, tunables))


@needs_kernelbench
@pytest.mark.parametrize(("problem_id", "dim"), [(51, 1), (52, 1), (51, 0), (52, 2)])
def test_argreduce_ties_keep_the_first_index(interpreter: None, problem_id: int, dim: int) -> None:
    problem = _problem(problem_id)
    template = _template(problem, CASES[problem_id][0])
    # Few distinct values: every line has many equal extremes, some in later chunks.
    x = torch.randint(0, 3, (3, 40, 6), generator=torch.Generator().manual_seed(2)).float()
    _compare(problem, template, {}, [dim], {"BLOCK_SIZE": 16, "COL_BLOCK": 4}, [x])


@needs_kernelbench
@pytest.mark.gpu
@pytest.mark.parametrize("problem_id", sorted(CASES))
def test_template_compiles_and_matches_on_the_gpu(monkeypatch: pytest.MonkeyPatch, problem_id: int) -> None:
    """Compiled Triton accepts what the interpreter does not check (Python ints from a range over program
    ids, specialised arguments): every family template, compiled, at its cases' sizes and tunables."""
    from triton.runtime.interpreter import InterpretedFunction

    if not torch.cuda.is_available() or isinstance(triton.language.standard.cdiv, InterpretedFunction):
        pytest.skip("needs a CUDA GPU and compiled Triton")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    family, cases = CASES[problem_id]
    problem = _problem(problem_id)
    for template in _family_templates(problem, family):
        for sizes, init, tunables in cases:
            module = load_reference_module(problem.code, sizes)
            tuned = _own(template, tunables)
            candidate = _BACKEND.load(apply_values(template.source, tuned), f"kb_template_{next(_counter)}")
            args = module.get_init_inputs() if init is None else init
            torch.manual_seed(0)
            reference = module.Model(*args)
            torch.manual_seed(0)
            model = candidate.ModelNew(*args).cuda()
            torch.manual_seed(1)
            inputs = module.get_inputs()
            with torch.no_grad():
                expected = _flat(reference(*inputs))
                got = _flat(model(*[t.cuda() if isinstance(t, torch.Tensor) else t for t in inputs]))
            for e, g in zip(expected, got, strict=True):
                assert g.shape == e.shape and g.dtype == e.dtype, template.name
                assert torch.allclose(g.cpu().double(), e.double(), atol=1e-4, rtol=1e-4), (
                    f"{template.name} {sizes} {tuned}: max abs error "
                    f"{(g.cpu().double() - e.double()).abs().max().item():.3g}"
                )


@needs_kernelbench
def test_only_a_matrix_vector_product_is_tagged_matvec_and_the_template_refuses_a_gemm(
    interpreter: None,
) -> None:
    """KernelBench 1-18 share the forward `torch.matmul(A, B)`; the tag comes from the inputs' shapes."""
    assert "matvec" in problem_tags(_problem(4))
    assert not any("matvec" in problem_tags(_problem(pid)) for pid in (1, 2, 6, 17))
    candidate = _BACKEND.load(_template(_problem(4), "matvec").source, f"kb_template_{next(_counter)}")
    with pytest.raises(ValueError, match=r"\(M, K\) @ \(K, 1\)"):
        candidate.ModelNew()(torch.rand(4, 8), torch.rand(8, 2))


@needs_kernelbench
@pytest.mark.parametrize("problem_id", [38, 39])
def test_line_norms_divide_a_3d_input_along_dim_1(interpreter: None, problem_id: int) -> None:
    """KernelBench's inputs are 2-D; the same forward on a 3-D input reduces strided columns."""
    problem = _problem(problem_id)
    template = _template(problem, CASES[problem_id][0])
    x = torch.rand((3, 20, 7), generator=torch.Generator().manual_seed(6)) - 0.3
    _compare(problem, template, {}, [], {"COL_BLOCK_R": 8, "COL_BLOCK_I": 4}, [x])


@needs_kernelbench
@pytest.mark.parametrize(("problem_id", "dim"), [(49, 1), (53, 1), (49, 2), (53, 0)])
def test_max_and_min_over_a_dim_return_nan_for_a_line_with_nan(
    interpreter: None, problem_id: int, dim: int
) -> None:
    problem = _problem(problem_id)
    template = _template(problem, CASES[problem_id][0])
    x = torch.rand((3, 40, 6), generator=torch.Generator().manual_seed(5))
    x[0, 33, 2] = x[2, 1, 5] = float("nan")  # late in one line, first in another; chunks of 16 and 4
    module = load_reference_module(problem.code, {})
    candidate = _BACKEND.load(apply_values(template.source, {"BLOCK_SIZE": 16, "COL_BLOCK_R": 4}), "kb_nan")
    with torch.no_grad():
        want, got = module.Model(dim)(x), candidate.ModelNew(dim)(x)
    assert got.isnan().any()
    torch.testing.assert_close(got, want, equal_nan=True, atol=0, rtol=0)


@needs_kernelbench
@pytest.mark.parametrize(("problem_id", "family", "other"), [(43, "max_pool3d", "avg_pool3d"),
                                                             (46, "avg_pool3d", "max_pool3d")])  # fmt: skip
def test_3d_pooling_problems_get_their_family_tag(problem_id: int, family: str, other: str) -> None:
    tags = problem_tags(_problem(problem_id))
    assert family in tags and "pooling" in tags and other not in tags


def _pool3d_candidate(problem_id: int, tunables: dict[str, Any]) -> Any:
    template = _template(_problem(problem_id), CASES[problem_id][0])
    return _BACKEND.load(apply_values(template.source, tunables), f"kb_template_{next(_counter)}")


@needs_kernelbench
@pytest.mark.parametrize(("sizes", "kernel", "stride", "padding"), [((8, 9, 10), 4, 3, 2),
                                                                   ((11, 6, 7), (5, 2, 4), (4, 1, 3), (2, 1, 2))])  # fmt: skip
def test_avg_pool3d_ceil_mode_divides_by_the_window_clipped_to_the_padded_input(
    interpreter: None, sizes: tuple[int, ...], kernel: Any, stride: Any, padding: Any
) -> None:
    candidate = _pool3d_candidate(46, {"BLOCK_SIZE": 32})
    x = torch.rand((2, 3, *sizes), generator=torch.Generator().manual_seed(3))
    volume = kernel**3 if isinstance(kernel, int) else kernel[0] * kernel[1] * kernel[2]
    expected = torch.nn.AvgPool3d(kernel, stride, padding, ceil_mode=True)(x)
    by_volume = torch.nn.AvgPool3d(kernel, stride, padding, ceil_mode=True, divisor_override=volume)(x)
    assert not torch.allclose(expected, by_volume), "no window runs past the padded input: case tests nothing"
    got = candidate.ModelNew(kernel, stride, padding, True)(x)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)


@needs_kernelbench
def test_max_pool3d_ties_keep_the_first_tap_and_nan_wins(interpreter: None) -> None:
    candidate = _pool3d_candidate(43, {"BLOCK_SIZE": 32})
    x = torch.randint(0, 3, (2, 3, 6, 7, 8), generator=torch.Generator().manual_seed(4)).float()
    x[0, 1, 2, 3, 4] = x[1, 0, 3, 3, 3] = x[1, 0, 3, 3, 4] = float("nan")
    args = (3, 2, 1, 2, True, True)
    (want, want_indices), (got, got_indices) = torch.nn.MaxPool3d(*args)(x), candidate.ModelNew(*args)(x)
    torch.testing.assert_close(got, want, equal_nan=True)
    assert torch.equal(got_indices, want_indices)


@needs_kernelbench
@pytest.mark.parametrize("problem_id", [43, 46])
def test_3d_pooling_int64_indexing_matches(interpreter: None, problem_id: int) -> None:
    """The int64 path serves outputs or planes past 2**31 elements; a zero limit forces it at small sizes."""
    family, cases = CASES[problem_id]
    problem = _problem(problem_id)
    template = _template(problem, family)
    limit = "INT32_MAX = 2**31 - 1"
    assert template.source.count(limit) == 1
    wide = replace(template, source=template.source.replace(limit, "INT32_MAX = 0"))
    for sizes, init, tunables in cases[:2]:
        _compare(problem, wide, sizes, init, tunables)


@needs_kernelbench
def test_tags_only_for_the_exact_reference_form() -> None:
    problem = _problem(89)
    assert "cumsum_dim" in problem_tags(problem)
    changed = problem.code.replace(
        "return torch.cumsum(x, dim=self.dim)", "return torch.cumsum(x, dim=self.dim) * 2"
    )
    assert changed != problem.code
    tags = problem_tags(Problem(1, 89, problem.name, changed))
    assert "cumsum_dim" not in tags and "scan" in tags


@needs_kernelbench
def test_harness_accepts_a_template_strictly(interpreter: None) -> None:
    problem = _problem(51)
    spec = scale_for_cpu(problem_to_spec(problem), CPU_BUDGET)
    template = _template(problem, "argmax_dim")
    settings = EvalSettings(
        correctness_trials=2, timing_trials=2, warmup_trials=1, measure_compile_baseline=False
    )
    request = EvalRequest(Candidate(template.source, "triton", "template"), spec, "cpu", settings)
    report = evaluate(request, load_platform("cpu"))
    assert report.status is Status.OK, report.feedback
