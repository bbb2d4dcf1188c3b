"""scaled_dot_product_attention problems (KernelBench 97) get the sdpa templates, which match them.

KernelBench 97 is fp32 with head_dim 1024, where a flash kernel's per-program accumulator does not
fit; `sdpa_materialized` serves any head_dim. The reference forms the sdpa tag accepts are checked
on L1-L3 and on inline variants; the templates are checked under the Triton interpreter at small
non-power-of-two sizes (masks, several tiles, workspace chunks) and through the real harness.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from triton.runtime.interpreter import InterpretedFunction  # noqa: E402

from kernelevolve.backends.triton import TritonBackend  # noqa: E402
from kernelevolve.bench.kernelbench.problems import Problem, list_problems, problem_tags, problem_to_spec  # noqa: E402
from kernelevolve.eval.harness import evaluate  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, ShapeCase, Status  # noqa: E402
from kernelevolve.variation.template_library import Template, templates_for  # noqa: E402
from kernelevolve.variation.tunables import apply_values  # noqa: E402
from tests.kernelbench_data import KERNELBENCH, needs_kernelbench  # noqa: E402

# Triton 3.6's interpreter converts 1-element arrays with int(); NumPy 2.3 warns on every loop bound.
pytestmark = pytest.mark.filterwarnings("ignore:Conversion of an array with ndim > 0:DeprecationWarning")

INTERPRETED = isinstance(triton.language.standard.cdiv, InterpretedFunction)
# KernelBench 97's size constants at a size the interpreter runs in a second; non-powers of two.
SMALL_SHAPE = {"batch_size": 2, "num_heads": 2, "sequence_length": 48, "embedding_dimension": 40}
# Tiles smaller than the shape: several query/key tiles, head_dim tails, several head_dim blocks
# of v, and a workspace of 3 (48 x 48) score matrices, so 4 batch-heads take two chunks.
SMALL_TUNABLES = {
    "sdpa_materialized": {"S_BLOCK_M": 16, "S_BLOCK_N": 32, "S_BLOCK_K": 16, "O_BLOCK_M": 32,
                          "O_BLOCK_N": 16, "O_BLOCK_D": 16, "SCORES_PER_LAUNCH": 3 * 48 * 48},
    "flash_attention": {"BLOCK_M": 16, "BLOCK_N": 16},
}  # fmt: skip

_BACKEND = TritonBackend()
_counter = iter(range(1 << 30))


def _problem_97() -> Problem:
    with KERNELBENCH.open() as lines:
        record = next(r for r in map(json.loads, lines) if (r["level"], r["problem_id"]) == (1, 97))
    return Problem(1, 97, record["name"], record["code"])


def _sdpa_problem(init: str, call: str, imports: str = "") -> Problem:
    """A KernelBench-form reference whose forward is `call`; with `init`, it takes the scale 0.3."""
    code = f"""
import torch
import torch.nn as nn
{imports}

class Model(nn.Module):
    def __init__(self{", scale" if init else ""}):
        super().__init__()
        {init}

    def forward(self, query, key, value):
        {call}

def get_inputs():
    return [torch.rand(2, 3, 20, 24), torch.rand(2, 3, 37, 24), torch.rand(2, 3, 37, 17)]

def get_init_inputs():
    return {"[0.3]" if init else "[]"}
"""
    return Problem(1, 0, "0_ScaledDotProductAttention", code)


def _load(template: Template, tunables: dict[str, Any]) -> Any:
    return _BACKEND.load(apply_values(template.source, tunables), f"sdpa_template_{next(_counter)}")


def _check(model: Any, q: Any, k: Any, v: Any, scale: float | None = None) -> None:
    with torch.no_grad():
        got = model(q, k, v)
        want = torch.nn.functional.scaled_dot_product_attention(
            q.double(), k.double(), v.double(), scale=scale
        )
    assert got.shape == want.shape and got.dtype == q.dtype
    torch.testing.assert_close(got.double(), want, atol=1e-4, rtol=1e-4)


@needs_kernelbench
def test_only_kernelbench_97_is_tagged_sdpa_and_gets_the_sdpa_templates() -> None:
    tagged = [(p.level, p.problem_id) for p in list_problems(KERNELBENCH) if "sdpa" in problem_tags(p)]
    assert tagged == [(1, 97)]
    names = {t.name for t in templates_for(problem_to_spec(_problem_97()), "triton")}
    assert {"sdpa_materialized", "flash_attention"} <= names


@pytest.mark.parametrize(
    ("init", "call", "imports", "tagged"),
    [
        ("", "return torch.nn.functional.scaled_dot_product_attention(query, key, value)", "", True),
        ("", "out = nn.functional.scaled_dot_product_attention(query, key, value)\n        return out", "", True),
        ("self.scale = scale", "return F.scaled_dot_product_attention(query, key, value, scale=self.scale)",
         "import torch.nn.functional as F", True),
        # F. without that import, causality, swapped inputs, an extra op, an unused scale: not this form.
        ("", "return F.scaled_dot_product_attention(query, key, value)", "", False),
        ("", "return torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True)", "", False),
        ("", "return torch.nn.functional.scaled_dot_product_attention(key, query, value)", "", False),
        ("", "out = torch.nn.functional.scaled_dot_product_attention(query, key, value)\n        return out * 2",
         "", False),
        ("self.scale = scale", "return torch.nn.functional.scaled_dot_product_attention(query, key, value)", "",
         False),
    ],
)  # fmt: skip
def test_sdpa_tag_only_for_the_forms_the_templates_compute(
    init: str, call: str, imports: str, tagged: bool
) -> None:
    assert ("sdpa" in problem_tags(_sdpa_problem(init, call, imports))) is tagged


@needs_kernelbench
@pytest.mark.parametrize("name", sorted(SMALL_TUNABLES))
@pytest.mark.parametrize("small", [False, True], ids=["shipped", "small"])
def test_template_matches_kernelbench_97_at_a_small_shape(interpreter: None, name: str, small: bool) -> None:
    template = next(t for t in templates_for(problem_to_spec(_problem_97()), "triton") if t.name == name)
    model = _load(template, SMALL_TUNABLES[name] if small else {}).ModelNew()
    b, h, s, d = SMALL_SHAPE.values()
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.rand((b, h, s, d), generator=generator) for _ in range(3))  # KernelBench's inputs
    _check(model, q, k, v)


@needs_kernelbench
def test_flash_refuses_head_dims_its_tiles_cannot_hold_before_compiling() -> None:
    template = next(
        t for t in templates_for(problem_to_spec(_problem_97()), "triton") if t.name == "flash_attention"
    )
    model = _load(template, {}).ModelNew()
    q = torch.rand(1, 1, 4, 1024)  # KernelBench 97's head_dim: the kernel never launches
    with pytest.raises(ValueError, match="head_dim 1024 .* above its 256; sdpa_materialized serves"):
        model(q, q, q)


def test_materialized_serves_scale_cross_attention_and_any_layout(interpreter: None) -> None:
    problem = _sdpa_problem(
        "self.scale = scale",
        "return F.scaled_dot_product_attention(query, key, value, scale=self.scale)",
        "import torch.nn.functional as F",
    )
    template = next(
        t for t in templates_for(problem_to_spec(problem), "triton") if t.name == "sdpa_materialized"
    )
    module = _load(template, {**SMALL_TUNABLES["sdpa_materialized"], "SCORES_PER_LAUNCH": 2 * 20 * 37})
    g = torch.Generator().manual_seed(1)
    # seq_q != seq_k, v's head_dim != q's, q a transposed (batch, seq, heads, dim) view.
    q = torch.randn((2, 20, 3, 24), generator=g).transpose(1, 2)
    k, v = torch.randn((2, 3, 37, 24), generator=g), torch.randn((2, 3, 37, 17), generator=g)
    _check(module.ModelNew(0.3), q, k, v, scale=0.3)
    # 3-D (batch, seq, dim) and 5-D inputs.
    q3, k3, v3 = (torch.randn((3, 21, 24), generator=g) for _ in range(3))
    _check(module.ModelNew(), q3, k3, v3)
    q5, k5, v5 = (torch.randn((2, 2, 2, 19, 24), generator=g) for _ in range(3))
    _check(module.ModelNew(), q5, k5, v5)


@needs_kernelbench
def test_harness_accepts_sdpa_materialized_strictly_for_kernelbench_97(interpreter: None) -> None:
    problem = _problem_97()
    spec = replace(problem_to_spec(problem), shapes=(ShapeCase("small", dict(SMALL_SHAPE)),))
    template = next(t for t in templates_for(spec, "triton") if t.name == "sdpa_materialized")
    settings = EvalSettings(
        correctness_trials=2, timing_trials=2, warmup_trials=1, measure_compile_baseline=False
    )
    source = apply_values(template.source, SMALL_TUNABLES["sdpa_materialized"])
    report = evaluate(
        EvalRequest(Candidate(source, "triton", "template"), spec, "cpu", settings), load_platform("cpu")
    )
    assert (spec.atol, spec.rtol) == (1e-4, 1e-4)
    assert report.status is Status.OK, report.feedback


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available() or INTERPRETED, reason="needs a CUDA GPU and compiled Triton"
)
@needs_kernelbench
@pytest.mark.parametrize("precision", ["tf32x3", "ieee"])
def test_materialized_compiles_at_kernelbench_97_head_dim_on_gpu(
    monkeypatch: pytest.MonkeyPatch, precision: str
) -> None:
    """KernelBench 97's head_dim 1024 and seq 512 in fp32, fewer batch-heads; fp32 tolerance 1e-4."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    template = next(
        t for t in templates_for(problem_to_spec(_problem_97()), "triton") if t.name == "sdpa_materialized"
    )
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.rand((2, 4, 512, 1024), generator=generator).cuda() for _ in range(3))
    _check(_load(template, {"FP32_PRECISION": precision}).ModelNew(), q, k, v)
