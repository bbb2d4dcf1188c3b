"""Elementwise seeds: the reference as written, its activations and number arithmetic in our kernels
(CPU: Triton's interpreter)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from kernelevolve.eval.static_checks import check_source, reference_state
from kernelevolve.platforms import load_platform
from kernelevolve.types import EvalRequest, EvalSettings, KernelSpec, ShapeCase, Status
from kernelevolve.variation.elementwise_seed import ElementwiseSeedOperator, elementwise_candidate
from tests.gpu import needs_cuda
from tests.proposal_context import seed_context
from tests.source_module import load_source

# KernelBench's L2/14 in small: a GEMM, then arithmetic, then a sum whose terms nearly cancel
GEMM_SUM_REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, input_size, hidden_size, scaling_factor):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = torch.matmul(x, self.weight.T)
        x = x / 2
        x = torch.sum(x, dim=1, keepdim=True)
        x = x * self.scaling_factor
        return x

def get_inputs():
    return [torch.rand(BATCH, 256)]

def get_init_inputs():
    return [256, 256, 1.5]
"""

# KernelBench's L3/33 in small: the hidden state is a tensor attribute, reassigned on every call
STATEFUL_RNN_REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, output_size: int):
        super(Model, self).__init__()
        self.hidden = torch.randn((batch_size, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.tanh = nn.Tanh()

    def forward(self, x: torch.Tensor, initial_hidden=None) -> torch.Tensor:
        if initial_hidden is not None:
            self.hidden.copy_(initial_hidden)
        self.hidden = self.hidden.to(x.device)
        combined = torch.cat((x, self.hidden), dim=1)
        self.hidden = self.tanh(self.i2h(combined))
        return self.h2o(self.hidden)

batch_size = 4

def get_inputs():
    return [torch.rand(batch_size, 24), torch.rand(batch_size, 32)]

def get_init_inputs():
    return [24, 32, 8]
"""

# every kind of substitution, and the places it must not touch
MIXED_REFERENCE = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.fc = nn.Linear(features, features * 2)
        self.act = nn.Sigmoid()
        self.keep = nn.ReLU(inplace=True)
        self.other = nn.LeakyReLU(0.1)
        self.scale = scale

    def forward(self, x):
        y = self.act(self.fc(x)) * self.scale
        y = F.relu(y - 0.25) + torch.tanh(y)
        y = 1.5 - y
        y = 3 / (y + 4)
        half = y.shape[1] // 2
        return self.keep(y[:, :half] * -2.0) + y.size(1) * 0.5

def get_inputs():
    return [torch.randn(5, 6)]

def get_init_inputs():
    return [6, 0.75]
"""


def _pair(tmp_path: Path, reference: str, name: str) -> tuple[object, object, list[torch.Tensor]]:
    source, replaced = elementwise_candidate(reference)
    assert replaced and not check_source(source, "triton", False, reference_state(reference))
    ref, new = load_source(reference, tmp_path, f"{name}_ref"), load_source(source, tmp_path, f"{name}_new")
    torch.manual_seed(0)
    ref_model = ref.Model(*ref.get_init_inputs())
    torch.manual_seed(0)
    new_model = new.ModelNew(*ref.get_init_inputs())
    torch.manual_seed(1)
    return ref_model, new_model, ref.get_inputs()


def test_the_substitutions_and_what_is_left_alone() -> None:
    source, replaced = elementwise_candidate(MIXED_REFERENCE)
    # y.size(1) * 0.5 too: the helper leaves numbers to Python at run time
    assert sorted(replaced) == ["add", "mul", "mul", "mul", "relu", "relu", "sigmoid", "sub", "sub", "tanh"]
    assert "self.act = _KeActivation('sigmoid')" in source
    assert "self.keep = _KeActivation('relu')" in source  # in place in PyTorch's; the values are the same
    assert "self.other = nn.LeakyReLU(0.1)" in source  # not ours
    assert "_ke_activation(_ke_arithmetic(y, 0.25, 'sub'), 'relu')" in source
    assert "_ke_arithmetic(1.5, y, 'sub')" in source
    assert "3 / _ke_arithmetic(y, 4, 'add')" in source  # a number over a tensor stays PyTorch's
    assert "nn.Linear(features, features * 2)" in source  # __init__'s arithmetic is on numbers
    assert "y.shape[1] // 2" in source
    assert "class ModelNew(nn.Module)" in source and "def get_inputs" not in source


def test_the_mixed_model_matches_pytorch(interpreter: None, tmp_path: Path) -> None:
    ref_model, new_model, inputs = _pair(tmp_path, MIXED_REFERENCE, "mixed")
    with torch.no_grad():
        torch.testing.assert_close(new_model(*inputs), ref_model(*inputs), atol=1e-6, rtol=1e-6)


def test_number_arithmetic_is_pytorchs_bit_for_bit(interpreter: None, tmp_path: Path) -> None:
    """fp32 with the number rounded to fp32, and a division as a multiplication by the fp32 reciprocal."""
    source, _ = elementwise_candidate(GEMM_SUM_REFERENCE.replace("BATCH", "4"))
    module = load_source(source, tmp_path, "arithmetic")
    x = torch.randn(1000) * 100
    for number in (2, 1.5, 0.1, -3, 7.25e-3):
        assert torch.equal(module._ke_arithmetic(x, number, "mul"), x * number)
        assert torch.equal(module._ke_arithmetic(number, x, "add"), number + x)
        assert torch.equal(module._ke_arithmetic(x, number, "sub"), x - number)
        assert torch.equal(module._ke_arithmetic(number, x, "sub"), number - x)
        fp32_reciprocal = 1.0 / torch.tensor(number, dtype=torch.float32)  # rounded once, in fp32
        assert torch.equal(module._ke_arithmetic(x, number, "div"), x * fp32_reciprocal)
    assert torch.equal(module._ke_arithmetic(x, 2, "div"), x / 2)  # a power of two: exact either way
    assert module._ke_arithmetic(3, 4, "mul") == 12  # numbers stay Python's
    assert module._ke_arithmetic(3, 2, "div") == 1.5
    assert module._ke_fp32(1e300) == math.inf and module._ke_fp32(-1e300) == -math.inf
    ints = torch.arange(5)
    assert torch.equal(module._ke_arithmetic(ints, 2, "mul"), ints * 2)  # not fp32: PyTorch's own


def test_the_host_reciprocal_is_the_correctly_rounded_fp32_one(tmp_path: Path) -> None:
    """Divided in double, rounded to fp32: the same as one fp32 division, for any divisor."""
    source, _ = elementwise_candidate(GEMM_SUM_REFERENCE.replace("BATCH", "4"))
    module = load_source(source, tmp_path, "reciprocal")
    divisors = torch.cat(
        [torch.randn(20000) * 10.0 ** torch.randint(-30, 30, (20000,)), torch.arange(1, 2000)]
    )
    divisors = divisors[divisors != 0].float()
    ours = torch.tensor([module._ke_fp32(1.0 / module._ke_fp32(float(d))) for d in divisors])
    assert torch.equal(ours, 1.0 / divisors)


def test_activations_match_pytorch(interpreter: None, tmp_path: Path) -> None:
    source, _ = elementwise_candidate(MIXED_REFERENCE)
    module = load_source(source, tmp_path, "activations")
    x = torch.cat([torch.randn(3000) * 10, torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan])])
    activations = (("relu", torch.relu), ("tanh", torch.tanh), ("sigmoid", torch.sigmoid), ("relu6", F.relu6))
    for name, reference in activations:
        torch.testing.assert_close(
            module._ke_activation(x, name), reference(x), atol=1e-6, rtol=1e-6, equal_nan=True
        )
    assert module._ke_activation(torch.empty(0, 3), "relu").shape == (0, 3)  # no launch for no elements
    strided = torch.randn(8, 6).t()
    torch.testing.assert_close(module._ke_activation(strided, "tanh"), torch.tanh(strided))


def test_the_stateful_rnn_matches_over_calls(interpreter: None, tmp_path: Path) -> None:
    ref_model, new_model, inputs = _pair(tmp_path, STATEFUL_RNN_REFERENCE, "stateful")
    assert torch.equal(ref_model.hidden, new_model.hidden)  # the constructor drew the same state
    with torch.no_grad():
        for call in range(3):  # with and without the initial state: the kept state must follow
            args = inputs if call != 1 else inputs[:1]
            torch.testing.assert_close(new_model(*args), ref_model(*args), atol=1e-6, rtol=1e-6)
            torch.testing.assert_close(new_model.hidden, ref_model.hidden, atol=1e-6, rtol=1e-6)


def test_the_operator_offers_a_seed_in_permissive_runs_where_library_work_remains() -> None:
    platform = load_platform("cpu")
    spec = KernelSpec(name="rnn", reference_source=STATEFUL_RNN_REFERENCE)
    (seed,) = ElementwiseSeedOperator().propose(seed_context(spec, platform))
    assert seed.metadata["elementwise"] == ["tanh"]
    assert seed.metadata["params"] == {"ELEMENTWISE_BLOCK": 1024, "ELEMENTWISE_WARPS": 4}
    assert ElementwiseSeedOperator(strict=True).propose(seed_context(spec, platform)) == []
    # all elementwise (KernelBench's L1/19): templates and compiler seeds fuse it, this seed would not
    relu_only = STATEFUL_RNN_REFERENCE.replace("nn.Linear", "nn.Identity")
    assert (
        ElementwiseSeedOperator().propose(
            seed_context(KernelSpec(name="x", reference_source=relu_only), platform)
        )
        == []
    )
    bad = KernelSpec(name="bad", reference_source="def f(:\n")
    assert ElementwiseSeedOperator().propose(seed_context(bad, platform)) == []


@pytest.mark.parametrize(
    ("name", "reference"),
    [("gemm_sum", GEMM_SUM_REFERENCE.replace("BATCH", "64")), ("stateful_rnn", STATEFUL_RNN_REFERENCE)],
)
def test_the_seeds_pass_the_harness(interpreter: None, name: str, reference: str) -> None:
    """The two problems no other seed covers: L2/14's tolerance, L3/33's state kept between calls."""
    from kernelevolve.eval.local import LocalEvaluator

    platform = load_platform("cpu")
    spec = KernelSpec(name=name, reference_source=reference, atol=1e-4, rtol=1e-4)
    (seed,) = ElementwiseSeedOperator().propose(seed_context(spec, platform))
    settings = EvalSettings(correctness_trials=3, timing_trials=2, warmup_trials=1, strict=False)
    with LocalEvaluator(platform, settings) as evaluator:
        report = evaluator.submit(EvalRequest(seed, spec, platform.name, settings)).result()
    assert report.status is Status.OK, report.feedback


def test_a_copied_constant_follows_the_shape_in_the_harness(interpreter: None) -> None:
    """The stateful model reads the module's `batch_size` in __init__: at a shape that sets it the copy must
    see the shape's value too, and its own value back at the next shape (CPU-scaled KernelBench specs)."""
    from kernelevolve.eval.local import LocalEvaluator

    platform = load_platform("cpu")
    shapes = (
        ShapeCase("small", {"batch_size": 2}),
        ShapeCase("default"),
        ShapeCase("large", {"batch_size": 6}),
    )
    spec = KernelSpec(name="rnn_shapes", reference_source=STATEFUL_RNN_REFERENCE, shapes=shapes)
    (seed,) = ElementwiseSeedOperator().propose(seed_context(spec, platform))
    settings = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1, strict=False)
    with LocalEvaluator(platform, settings) as evaluator:
        report = evaluator.submit(EvalRequest(seed, spec, platform.name, settings)).result()
    assert report.status is Status.OK, report.feedback
    assert set(report.latency) == {"small", "default", "large"}


@pytest.mark.gpu
@needs_cuda
def test_the_gemm_sum_seed_is_exact_at_kernelbench_size_on_a_gpu(tmp_path: Path) -> None:
    """L2/14 at full size on a GPU: every candidate so far missed its tolerance; this one repeats eager."""
    reference = GEMM_SUM_REFERENCE.replace("BATCH, 256", "1024, 8192").replace(
        "[256, 256, 1.5]", "[8192, 8192, 1.5]"
    )
    ref_model, new_model, inputs = _pair(tmp_path, reference, "gemm_sum_gpu")
    x = inputs[0].cuda()
    with torch.no_grad():
        expected, got = ref_model.cuda()(x), new_model.cuda()(x)
    assert torch.equal(got, expected)
