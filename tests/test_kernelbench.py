"""KernelBench problems read from the configured path, and CPU scaling of their sizes."""

from __future__ import annotations

import json

import pytest

from kernelevolve.bench.kernelbench.problems import (
    list_problems,
    load_problem,
    problem_to_spec,
    scale_for_cpu,
)
from kernelevolve.platforms import load_platform
from kernelevolve.specs.loading import resolve_spec
from kernelevolve.specs.reference_check import run_reference
from kernelevolve.specs.reference_module import shaped_source, size_constants
from tests.kernelbench_data import KERNELBENCH, needs_kernelbench

CONV_LIKE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, channels, bias_shape):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return x + self.bias

batch_size = 64
channels = 256
height = width = 64
bias_shape = (channels, 1, 1)

def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]

def get_init_inputs():
    return [channels, bias_shape]
"""


def test_shaped_source_recomputes_derived_constants():
    source = shaped_source(CONV_LIKE, {"channels": 8, "height": 4})
    constants = size_constants(source)
    assert constants["bias_shape"] == (8, 1, 1)
    assert constants["height"] == 4 and constants["width"] == 64
    with pytest.raises(ValueError, match="unknown constant"):
        shaped_source(CONV_LIKE, {"chanels": 8})


def test_checkout_layout(tmp_path):
    level = tmp_path / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "7_Bias.py").write_text(CONV_LIKE)
    problems = list_problems(tmp_path, (1,))
    assert [(p.level, p.problem_id, p.name) for p in problems] == [(1, 7, "7_Bias")]


def test_jsonl_layout_and_scaling(tmp_path):
    path = tmp_path / "problems.jsonl"
    path.write_text(json.dumps({"level": 2, "problem_id": 3, "name": "3_Bias", "code": CONV_LIKE}) + "\n")
    spec = problem_to_spec(load_problem(path, 2, 3))
    assert spec.origin == "kernelbench:L2/3" and spec.atol == 1e-4
    scaled = scale_for_cpu(spec, 1 << 15)
    assert scaled.scaling["elements"] <= 1 << 15
    params = scaled.shapes[0].params
    assert params["channels"] < 256 and "bias_shape" not in params
    output, _ = run_reference(scaled, scaled.shapes[0], "cpu")
    assert output.shape[1] == params["channels"]


@needs_kernelbench
@pytest.mark.parametrize("problem", ["1/1", "1/36", "2/1", "3/1", "3/43"])
def test_real_problems_scale_to_budget(problem):
    config = {"kernelbench": {"path": str(KERNELBENCH), "cpu_budget_elements": 1 << 16}}
    spec = resolve_spec(f"kernelbench:{problem}", load_platform("cpu"), config)
    assert spec.scaling and spec.scaling["elements"] <= 1 << 16
    assert spec.shapes[0].name == "cpu_scaled"


@needs_kernelbench
def test_gpu_platform_keeps_original_sizes():
    spec = resolve_spec("kb:L1/19", load_platform("h200"), {"kernelbench": {"path": str(KERNELBENCH)}})
    assert spec.shapes[0].params == {} and not spec.scaling
    assert len(list_problems(KERNELBENCH)) == 250


def test_a_name_alone_does_not_make_a_template_family() -> None:
    """45_UNetSoftmax is a U-Net: the softmax templates (which need that exact forward) must not apply."""
    from kernelevolve.bench.kernelbench.problems import Problem, problem_tags

    softmax = (
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return torch.softmax(x, dim=1)\n\ndef get_inputs():\n    return [torch.randn(16, 64)]\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    assert "softmax" in problem_tags(Problem(1, 23, "23_Softmax", softmax))
    assert "softmax" in problem_tags(
        Problem(1, 7, "7_AnyName", softmax)
    )  # what it does, not what it is called
    assert "softmax" not in problem_tags(Problem(3, 45, "45_UNetSoftmax", "class Model: ..."))
