"""Spec loading and validation: every bad input gets a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.platforms import load_platform
from kernelevolve.specs.loading import SpecError, resolve_spec

REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale

batch_size = 4
dim = 32

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return [2.0]
"""


@pytest.fixture()
def cpu():
    return load_platform("cpu")


@pytest.fixture()
def h200():
    return load_platform("h200")


def _write(tmp_path: Path, yaml_text: str, reference: str = REFERENCE) -> Path:
    (tmp_path / "ref.py").write_text(reference)
    spec = tmp_path / "op.yaml"
    spec.write_text(yaml_text)
    return spec


def test_user_spec_file_with_cpu_shapes(tmp_path, cpu, h200):
    path = _write(
        tmp_path,
        "name: scaled_relu\nreference: ref.py\ntags: [pointwise]\n"
        "shapes:\n  - {name: big, batch_size: 1024, dim: 4096}\n"
        "cpu_shapes:\n  - {name: small, batch_size: 2, dim: 8}\n",
    )
    on_cpu = resolve_spec(str(path), cpu)
    assert [s.name for s in on_cpu.shapes] == ["small"]
    assert on_cpu.atol == 1e-4 and on_cpu.dtype == "float32"
    on_gpu = resolve_spec(str(path), h200)
    assert on_gpu.shapes[0].params == {"batch_size": 1024, "dim": 4096}
    assert on_gpu.key != on_cpu.key


def test_relative_path_from_current_folder(tmp_path, cpu, monkeypatch):
    _write(tmp_path, "name: r\nreference: ref.py\n")
    monkeypatch.chdir(tmp_path)
    assert resolve_spec("op.yaml", cpu).name == "r"


def test_inline_reference_and_half_precision_default_tolerance(tmp_path, cpu):
    body = "\n".join("  " + line for line in REFERENCE.splitlines())
    path = _write(tmp_path, f"name: inline\ndtype: float16\nreference_code: |\n{body}\n")
    spec = resolve_spec(str(path), cpu)
    assert spec.reference_path is None
    assert spec.atol == 1e-2 and spec.rtol == 1e-2


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("name: x\nreference: ref.py\nshapez: []\n", "unknown key"),
        ("name: x\nreference: missing.py\n", "reference file not found"),
        ("name: x\nreference: ref.py\ndtype: float8\n", "dtype"),
        ("name: x\nreference: ref.py\nbackends: [cuda_c]\n", "unknown backend"),
        ("name: x\nreference: ref.py\nshapes:\n  - {name: a, batch: 3}\n", "unknown constant"),
        ("name: x\nreference: ref.py\natol: lots\n", "atol must be a number"),
        ("name: x\nreference: [unclosed\n", "malformed YAML"),
        ("- just\n- a list\n", "must be a YAML mapping"),
        ("reference: ref.py\n", "'name'"),
    ],
)
def test_bad_specs_name_the_problem(tmp_path, cpu, yaml_text, message):
    path = _write(tmp_path, yaml_text)
    with pytest.raises(SpecError, match=message):
        resolve_spec(str(path), cpu)


def test_reference_that_fails_to_run(tmp_path, cpu):
    broken = REFERENCE.replace("torch.relu(x) * self.scale", "x @ torch.ones(3, 3)")
    path = _write(tmp_path, "name: broken\nreference: ref.py\n", broken)
    with pytest.raises(SpecError, match="fails to run"):
        resolve_spec(str(path), cpu)


def test_missing_file_and_unknown_name(cpu):
    with pytest.raises(SpecError, match="spec file not found"):
        resolve_spec("does/not/exist.yaml", cpu)
    with pytest.raises(SpecError, match="unknown spec 'no_such_spec'"):
        resolve_spec("no_such_spec", cpu)


def test_kernelbench_needs_a_path(cpu):
    with pytest.raises(SpecError, match="kernelbench.path"):
        resolve_spec("kernelbench:1/19", cpu, None)
