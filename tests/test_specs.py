"""Spec loading and validation: every bad input gets a clear error."""

from __future__ import annotations

import subprocess
import sys
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
        ("name: x\nreference: ref.py\natol: lots\n", r"atol: must be a finite number >= 0, got 'lots'"),
        ("name: x\nreference: [unclosed\n", "malformed YAML"),
        ("- just\n- a list\n", "must be a YAML mapping"),
        ("reference: ref.py\n", "name: required: a non-empty string"),
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


@pytest.mark.parametrize(
    ("yaml_text", "line"),
    [
        ("shapez: []\n", "shapez: unknown key; valid keys: name, description, reference, reference_code, "),
        ("mode: inference\n", "mode: unknown mode 'inference'; valid: as_built, eval, train"),
        ("backends: [triton, cuda_c]\n", "backends[1]: unknown backend 'cuda_c'; valid: triton, cute"),
        (
            "backends: triton\n",
            "backends: must be a list of kernel languages, got 'triton'; valid: triton, cute",
        ),
        ("backward: {inputs: some}\n", "backward.inputs: must be 'all' or a list of input positions"),
        (
            "backward: {inputs: [0, -1]}\n",
            "backward.inputs: must be 'all' or a list of input positions in "
            "get_inputs() (ints >= 0), got [0, -1]",
        ),
        ("backward: {grads: true}\n", "backward.grads: unknown key; valid keys: inputs, parameters"),
        ("backward: yes please\n", "backward: must be true, false or a mapping with keys inputs, parameters"),
        ("rtol: .inf\n", "rtol: must be a finite number >= 0, got inf"),
        ("atol: -1\n", "atol: must be a finite number >= 0, got -1"),
        ("tags: gemm\n", "tags: must be a list of strings, got 'gemm'"),
        ("shapes: [3]\n", "shapes[0]: must be a mapping like {name: s1, batch_size: 8}, got 3"),
        ("reference_code: 'x = 1'\n", "reference, reference_code: give one, not both"),
        (
            "atol: lots\nmode: inference\n",
            "atol: must be a finite number >= 0, got 'lots'; mode: unknown mode",
        ),
    ],
)
def test_a_bad_field_is_one_line_naming_it_and_the_choices(tmp_path, cpu, yaml_text, line):
    path = _write(tmp_path, f"name: x\nreference: ref.py\n{yaml_text}")
    with pytest.raises(SpecError) as raised:
        resolve_spec(str(path), cpu)
    message = str(raised.value)
    assert message.startswith(f"file:{path}: {line}") and "\n" not in message, message


def test_only_parsing_a_spec_file_imports_pydantic() -> None:
    """The judge, the runner and KernelBench's specs never parse a spec file: they run without pydantic."""
    code = (
        "import sys, kernelevolve.specs.loading, kernelevolve.eval.harness, kernelevolve.eval.runner\n"
        "assert 'pydantic' not in sys.modules, 'pydantic imported'\n"
        "from kernelevolve.platforms import load_platform\n"
        "kernelevolve.specs.loading.resolve_spec('softmax', load_platform('cpu'), validate=False)\n"
        "assert 'pydantic' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
