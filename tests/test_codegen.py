"""Fusion codegen and the fusion_seed operator, on the CPU under the Triton interpreter.

Every emitted candidate is traced at a spec's first shape and must match the reference (1e-4, fp32)
at two shapes, with its default tunables and with tiny blocks that force the multi-block loops,
partial buffers and broadcast index arithmetic; signed inputs exercise negative branches.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelevolve.backends import get_backend
from kernelevolve.backends.triton import BACKEND
from kernelevolve.eval import harness
from kernelevolve.eval.static.checks import check_source
from kernelevolve.platforms import Platform, load_platform
from kernelevolve.search.graph import SearchGraph
from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.specs.reference_module import load_reference_module
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, ShapeCase, Status
from kernelevolve.variation.codegen import Generation, generate
from kernelevolve.variation.codegen.emit import reference_parts
from kernelevolve.variation.fusion_seed import FusionSeedOperator
from kernelevolve.variation.tunables import current_values, find_tunables
from tests.kernelbench_data import KERNELBENCH, needs_kernelbench

# Tiny shapes (traced at the first) for every KernelBench level-1 problem fusion codegen supports.
_ROWS = ({"batch_size": 4, "dim": 64}, {"batch_size": 3, "dim": 37})
_NCHW = (
    {"batch_size": 2, "features": 4, "dim1": 4, "dim2": 5},
    {"batch_size": 3, "features": 3, "dim1": 3, "dim2": 2},
)
_RED3 = ({"batch_size": 2, "dim1": 8, "dim2": 5}, {"batch_size": 3, "dim1": 6, "dim2": 7})
_LOSS = ({"batch_size": 4, "input_shape": (16,)}, {"batch_size": 5, "input_shape": (7,)})
KB_LEVEL1_SUPPORTED: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {
    5: ({"M": 4, "N": 33}, {"M": 5, "N": 8}),  # A * s with a Python float s
    12: ({"M": 6, "N": 9}, {"M": 5, "N": 4}),  # diag(A) @ B == A[:, None] * B
    **{pid: _ROWS for pid in (19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 38, 39, 88)},
    34: _NCHW,
    36: _NCHW,
    37: _NCHW,
    40: _NCHW,
    **{pid: _RED3 for pid in (47, 48, 49, 53)},
    **{pid: _LOSS for pid in (94, 96, 98)},
    100: ({"batch_size": 16, "input_shape": (16,)}, {"batch_size": 9, "input_shape": (9,)}),
}
# Level 1 problems outside the patterns, and the op the reason names.
KB_LEVEL1_UNSUPPORTED = {
    1: "aten.mm",
    33: "mutates",  # BatchNorm2d in training mode updates its running stats
    35: "native_group_norm",
    41: "MaxPool1d",
    50: "Conv2d",
    51: "argmax",
    89: "cumsum",
    95: "gather",
    99: "different axes",
}
SMALL_TUNABLES = {
    "BLOCK_SIZE": 16,
    "BLOCK_R": 4,
    "BLOCK_I": 2,
    "MAX_PARTIALS": 3,
    "ROW_MAX": 8,
    "MAX_PROGRAMS": 2,
}
_counter = itertools.count()


@pytest.fixture(scope="module", autouse=True)
def _interpreter() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        BACKEND.prepare_process("cpu")
        yield


def _kernelbench(level: int, problem_id: int) -> dict[str, Any]:
    for line in KERNELBENCH.read_text().splitlines():
        record = json.loads(line)
        if record["level"] == level and record["problem_id"] == problem_id:
            return record
    raise KeyError((level, problem_id))


def _spec(name: str, source: str, *shapes: dict[str, Any]) -> KernelSpec:
    cases = tuple(ShapeCase(f"s{i}", dict(params)) for i, params in enumerate(shapes)) or (
        ShapeCase("default"),
    )
    return KernelSpec(name=name, reference_source=source, shapes=cases)


def _shrink(source: str) -> str:
    for name, value in SMALL_TUNABLES.items():
        source = re.sub(rf"^{name} = \d+", f"{name} = {value}", source, flags=re.MULTILINE)
    return source


def _signed(inputs: list[Any]) -> list[Any]:
    return [t * 4 - 2 if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]


def _assert_matches(
    spec: KernelSpec, source: str, shape: ShapeCase, signed: bool = False, device: str = "cpu"
) -> None:
    candidate = get_backend("triton").load(source, f"fusion_candidate_{next(_counter)}")
    reference = load_reference_module(spec.reference_source, shape.params)
    with torch.device(device):
        torch.manual_seed(0)
        model = reference.Model(*reference.get_init_inputs())
        torch.manual_seed(0)
        fused = candidate.ModelNew(*reference.get_init_inputs())
        torch.manual_seed(1)
        inputs = reference.get_inputs()
    if signed:
        inputs = _signed(inputs)
    expected, got = model(*inputs), fused(*inputs)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, expected.shape)
    close = torch.allclose(got, expected, atol=1e-4, rtol=1e-4, equal_nan=True)
    assert close, (
        f"{spec.name} at {shape.params}: max error {(got - expected).abs().nan_to_num().max().item()}"
    )


def _check_generation(spec: KernelSpec, expect_pattern: str | None = None) -> Generation:
    gen = generate(spec)
    assert gen.supported, gen.reason
    if expect_pattern:
        assert gen.pattern == expect_pattern, gen.description
    first, second = spec.shapes[0], spec.shapes[-1]
    for variant in gen.variants:
        _assert_matches(spec, variant.source, first)
        _assert_matches(spec, variant.source, second)
        _assert_matches(spec, variant.source, first, signed=True)
        _assert_matches(spec, _shrink(variant.source), second, signed=True)
    return gen


@needs_kernelbench
@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")  # logs of signed inputs (KL loss)
@pytest.mark.parametrize("problem_id", sorted(KB_LEVEL1_SUPPORTED))
def test_kernelbench_level1_matches_reference_at_two_shapes(problem_id: int) -> None:
    record = _kernelbench(1, problem_id)
    spec = _spec(record["name"], record["code"], *KB_LEVEL1_SUPPORTED[problem_id])
    gen = _check_generation(spec)
    assert gen.symbolic and 1 <= len(gen.variants) <= 3


@needs_kernelbench
@pytest.mark.parametrize("problem_id", sorted(KB_LEVEL1_UNSUPPORTED))
def test_kernelbench_unsupported_says_why(problem_id: int) -> None:
    record = _kernelbench(1, problem_id)
    gen = generate(_spec(record["name"], record["code"]))
    assert not gen.supported and not gen.variants
    assert KB_LEVEL1_UNSUPPORTED[problem_id] in gen.reason


@needs_kernelbench
def test_kernelbench_level2_conv_tail_is_unsupported() -> None:
    record = _kernelbench(2, 1)  # conv2d + relu + bias
    gen = generate(_spec(record["name"], record["code"]))
    assert not gen.supported and "self.conv is a Conv2d" in gen.reason


HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
HAND_WRITTEN: dict[str, tuple[str, str, tuple[dict[str, Any], dict[str, Any]]]] = {
    # A conv-style epilogue: per-channel bias parameter broadcast over (B, C, H, W), tanh-GELU, clamp.
    "bias_gelu_clamp": (
        "pointwise",
        """
class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(channels, 1, 1))
        self.scale = 0.5

    def forward(self, x):
        y = F.gelu(x + self.bias, approximate="tanh") * self.scale
        return torch.clamp(y, min=-0.25, max=0.75) + torch.pow(x, 3) - x.abs() ** 1.5

b = 2
c = 3
h = 4
w = 5

def get_inputs():
    return [torch.randn(b, c, h, w)]

def get_init_inputs():
    return [c]
""",
        ({"b": 2, "c": 3, "h": 4, "w": 5}, {"b": 3, "c": 5, "h": 2, "w": 7}),
    ),
    # Centring over a middle axis (inner stride > 1) times a weight over the inner axes.
    "centre_middle_axis": (
        "row_reduction",
        """
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        centred = x - x.mean(dim=1, keepdim=True)
        return centred * self.weight / (x.amax(dim=1, keepdim=True) - x.amin(dim=1, keepdim=True))

b = 3
m = 6
n = 5

def get_inputs():
    return [torch.randn(b, m, n)]

def get_init_inputs():
    return [n]
""",
        ({"b": 3, "m": 6, "n": 5}, {"b": 2, "m": 9, "n": 3}),
    ),
    # Unbiased std (count - 1 from the run-time size), logsumexp, and a size read in forward.
    "std_logsumexp_size": (
        "row_reduction",
        """
class Model(nn.Module):
    def forward(self, x, y):
        return torch.std(x, dim=-1) + torch.logsumexp(x * y, dim=-1) + x.sum(-1) / x.shape[-1]

rows = 4
cols = 12

def get_inputs():
    return [torch.randn(rows, cols), torch.randn(rows, cols)]

def get_init_inputs():
    return []
""",
        ({"rows": 4, "cols": 12}, {"rows": 3, "cols": 21}),
    ),
    # A view that merges dims before the reduction, with keepdim broadcast back over the merged run.
    "flatten_then_normalise": (
        "row_reduction",
        """
class Model(nn.Module):
    def forward(self, x):
        flat = x.view(x.shape[0], -1)
        return (flat / flat.abs().sum(dim=1, keepdim=True)).view(x.shape)

b = 3
c = 4
h = 5

def get_inputs():
    return [torch.randn(b, c, h)]

def get_init_inputs():
    return []
""",
        ({"b": 3, "c": 4, "h": 5}, {"b": 2, "c": 3, "h": 7}),
    ),
    # Two reduction levels over everything: the split reduction chains two partial stages.
    "global_variance": (
        "full_reduction",
        """
class Model(nn.Module):
    def forward(self, x):
        return ((x - x.mean()) ** 2).mean() + torch.max(x)

n = 8
m = 9

def get_inputs():
    return [torch.randn(n, m)]

def get_init_inputs():
    return []
""",
        ({"n": 8, "m": 9}, {"n": 5, "m": 13}),
    ),
    # Parameters inside a ModuleList ("self.blocks[0].weight"), set in __init__ after the seed.
    "layer_norm_in_module_list": (
        "row_reduction",
        """
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.blocks = nn.ModuleList([nn.LayerNorm(n), nn.Identity()])
        with torch.no_grad():
            self.blocks[0].weight.uniform_(0.5, 1.5)
            self.blocks[0].bias.uniform_(-1.0, 1.0)

    def forward(self, x):
        return torch.relu(self.blocks[1](self.blocks[0](x)))

b = 3
n = 10

def get_inputs():
    return [torch.randn(b, n)]

def get_init_inputs():
    return [n]
""",
        ({"b": 3, "n": 10}, {"b": 2, "n": 33}),
    ),
    # __init__ builds its layers through helper methods (ResNet's _make_layer), a static one included.
    "helper_methods_in_init": (
        "row_reduction",
        """
class Model(nn.Module):
    low = 0.5

    def __init__(self, n):
        super().__init__()
        self.norm = self._make_norm(n)
        self.bias = nn.Parameter(self._initial_bias(n))

    def _make_norm(self, n):
        norm = nn.LayerNorm(n)
        with torch.no_grad():
            norm.weight.uniform_(self.low, 1.5)
        return norm

    @staticmethod
    def _initial_bias(n):
        return torch.randn(n)

    def forward(self, x):
        return torch.relu(self.norm(x)) + self.bias

b = 3
n = 10

def get_inputs():
    return [torch.randn(b, n)]

def get_init_inputs():
    return [n]
""",
        ({"b": 3, "n": 10}, {"b": 2, "n": 33}),
    ),
    # Softmax family over a middle axis: the online strategy folds each exp-sum into its max pass.
    "log_softmax_middle_axis": (
        "row_reduction",
        """
class Model(nn.Module):
    def forward(self, x):
        return F.log_softmax(x, dim=1) + torch.logsumexp(x, dim=1, keepdim=True)

b = 2
m = 7
n = 5

def get_inputs():
    return [torch.randn(b, m, n) * 4]

def get_init_inputs():
    return []
""",
        ({"b": 2, "m": 7, "n": 5}, {"b": 3, "m": 4, "n": 3}),
    ),
    # A transposed input read through strides, and a boolean output.
    "transposed_compare": (
        "pointwise",
        """
class Model(nn.Module):
    def forward(self, a, b):
        return (a.t() * 2.0 > b) | torch.isnan(b)

n = 5
m = 7

def get_inputs():
    return [torch.randn(n, m), torch.randn(m, n)]

def get_init_inputs():
    return []
""",
        ({"n": 5, "m": 7}, {"n": 3, "m": 2}),
    ),
}


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")  # masked lanes of log2/exp
@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_references(name: str) -> None:
    pattern, body, shapes = HAND_WRITTEN[name]
    _check_generation(_spec(name, HEADER + body, *shapes), expect_pattern=pattern)


@needs_kernelbench
def test_model_new_copies_every_method_but_forward() -> None:
    """ResNet18 (L3/9) builds its layers with Model._make_layer: ModelNew needs it to construct."""
    source = _kernelbench(3, 9)["code"]
    prelude, bases, body, forward_sig = reference_parts(source)
    assert "def _make_layer(" in body and "def forward" not in body
    indented = "\n".join("    " + line if line else "" for line in body.splitlines())
    candidate = "\n".join(prelude) + f"\n\n\nclass ModelNew({bases}):\n{indented}\n"
    candidate += f"\n    def forward({forward_sig}):\n        return x\n"
    reference = load_reference_module(source, {})
    built = get_backend("triton").load(candidate, f"model_new_{next(_counter)}")
    torch.manual_seed(0)
    expected = reference.Model(10).state_dict()
    torch.manual_seed(0)
    got = built.ModelNew(10).state_dict()
    assert list(got) == list(expected)
    assert all(torch.equal(got[k], expected[k]) for k in expected)


UNSUPPORTED_HAND_WRITTEN = {
    "a transpose of itself": "def forward(self, x):\n        return x + x.t()\n\nn = 4",
    "aten.mm": "def forward(self, x):\n        return x @ x\n\nn = 4",
    "different axes": "def forward(self, x):\n        return x.sum(0, keepdim=True) + x.sum(1, keepdim=True)\n\nn = 4",
}


@pytest.mark.parametrize("reason", sorted(UNSUPPORTED_HAND_WRITTEN))
def test_unsupported_hand_written(reason: str) -> None:
    source = HEADER + (
        "class Model(nn.Module):\n    "
        + UNSUPPORTED_HAND_WRITTEN[reason]
        + "\n\ndef get_inputs():\n    return [torch.randn(n, n)]\n\ndef get_init_inputs():\n    return []\n"
    )
    gen = generate(_spec("bad", source))
    assert not gen.supported and reason in gen.reason


def _context(
    spec: KernelSpec, graph: SearchGraph, backends: tuple[str, ...] = ("triton",)
) -> ProposalContext:
    return ProposalContext(spec, load_platform("cpu"), graph, (), random.Random(0), backends)


@needs_kernelbench
def test_operator_seeds_once_with_metadata_and_clean_source() -> None:
    record = _kernelbench(1, 23)  # softmax
    spec = _spec(record["name"], record["code"], *_ROWS)
    operator = FusionSeedOperator()
    assert operator.name == "fusion_seed" and operator.arity == 0
    graph = SearchGraph()
    seeds = operator.propose(_context(spec, graph))
    assert [c.metadata["strategy"] for c in seeds] == ["persistent", "online", "looped"]
    for seed in seeds:
        assert seed.operator == "fusion_seed" and seed.mode == "seed" and seed.backend == "triton"
        assert seed.metadata["pattern"] == "row_reduction"
        assert seed.metadata["params"] == {
            k: v for k, v in current_values(seed.source).items() if "@" not in k
        }
        declared = {t.name: t for t in find_tunables(seed.source) if t.declared}
        assert {"BLOCK_R", "NUM_WARPS"} <= set(declared) and 4 in declared["NUM_WARPS"].choices
        assert check_source(seed.source, "triton", strict=True) == []
        assert BACKEND.static_issues(seed.source) == []
        graph.add_candidate(seed)
    assert operator.propose(_context(spec, graph)) == []
    assert operator.propose(_context(spec, SearchGraph(), backends=("cute",))) == []


@needs_kernelbench
def test_operator_logs_why_it_has_no_seeds(caplog: pytest.LogCaptureFixture) -> None:
    record = _kernelbench(1, 50)
    with caplog.at_level(logging.INFO, logger="kernelevolve.variation.fusion_seed"):
        assert (
            FusionSeedOperator().propose(_context(_spec(record["name"], record["code"]), SearchGraph())) == []
        )
    assert any("not supported" in r.getMessage() and "Conv2d" in r.getMessage() for r in caplog.records)


def test_max_variants_is_validated() -> None:
    with pytest.raises(ValueError, match="max_variants"):
        FusionSeedOperator(max_variants=0)


@needs_kernelbench
@pytest.mark.parametrize("problem_id", [40, 94])
def test_seed_passes_the_harness(
    problem_id: int, cpu_platform: Platform, fast_settings: EvalSettings
) -> None:
    """The real evaluation path (strict static checks, poisoned outputs, both shapes) accepts the seed."""
    record = _kernelbench(1, problem_id)
    spec = _spec(record["name"], record["code"], *KB_LEVEL1_SUPPORTED[problem_id])
    seed = FusionSeedOperator(max_variants=1).propose(_context(spec, SearchGraph()))[0]
    request = EvalRequest(
        Candidate(seed.source, "triton", "fusion_seed"), spec, cpu_platform.name, fast_settings
    )
    report = harness.evaluate(request, cpu_platform)
    assert report.status is Status.OK, report.feedback
    assert set(report.latency) == {"s0", "s1"}


GPU_SHAPES = {
    23: ({"batch_size": 64, "dim": 70001}, {"batch_size": 33, "dim": 3000}),  # looped and in-register rows
    36: (
        {"batch_size": 4, "features": 64, "dim1": 65, "dim2": 129},
        {"batch_size": 3, "features": 7, "dim1": 9, "dim2": 5},
    ),
    47: ({"batch_size": 16, "dim1": 1000, "dim2": 999}, {"batch_size": 3, "dim1": 5, "dim2": 77}),
    94: ({"batch_size": 1024, "input_shape": (1023,)}, {"batch_size": 7, "input_shape": (5,)}),
    100: ({"batch_size": 2049, "input_shape": (2049,)}, {"batch_size": 65, "input_shape": (65,)}),
}


def _check_on_gpu(problem_id: int) -> None:
    """Runs in a fresh process: Triton imported for the interpreter cannot compile for the GPU."""
    record = _kernelbench(1, problem_id)
    spec = _spec(record["name"], record["code"], *GPU_SHAPES[problem_id])
    gen = generate(spec)
    assert gen.supported, gen.reason
    for variant in gen.variants:
        for shape in spec.shapes:
            _assert_matches(spec, variant.source, shape, device="cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@needs_kernelbench
@pytest.mark.parametrize("problem_id", sorted(GPU_SHAPES))
def test_kernelbench_seeds_compile_and_match_on_gpu(problem_id: int) -> None:
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_codegen as t; t._check_on_gpu({problem_id})"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
