"""The specs shipped in operators/: well-formed YAML, references that run on CPU at their small shapes
(every spec, cheaply), meaningful GPU sizes."""

from __future__ import annotations

import ast
import math
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

from kernelevolve.paths import SPEC_DIR
from kernelevolve.platforms import load_platform
from kernelevolve.specs.loading import load_spec_file, validate_reference
from kernelevolve.specs.shape_ranges import expand_entry

torch = pytest.importorskip("torch")

REQUIRED_KEYS = {"name", "description", "reference", "dtype", "backends", "tags", "shapes", "cpu_shapes"}
TOLERANCE_KEYS = {"atol", "rtol"}
# training specs (train_*): which gradients are checked; any spec: the winners' input distributions
OPTIONAL_KEYS = TOLERANCE_KEYS | {"backward", "input_distributions"}
DTYPES = {"float32": 4, "float16": 2, "bfloat16": 2}
REQUIRED_SPECS = {
    "elementwise_chain",
    "softmax",
    "layernorm",
    "rmsnorm",
    "row_sum",
    "gemm_bias_relu",
    "batched_gemm",
    "sdpa",
    "jagged_to_padded_dense",
    "embedding_bag_sum",
    "dot_interaction",
    # the model suite: recommendation and language-model operators in the dtypes those models run in
    "embedding_bag_mean",
    "bucketize",
    "feature_hash",
    "topk_retrieval",
    "segment_sum",
    "jagged_mean",
    "rope",
    "rmsnorm_llama",
    "linear_cross_entropy",
    "gqa_attention",
    "moe_router",
    "quantize_int8",
    "dequantize_int8",
}
# One benchmark run should move real data on an H200: more than its 60 MiB L2, well inside its memory.
MIN_GPU_BYTES, MAX_GPU_BYTES = 16 << 20, 8 << 30

SPEC_FILES = sorted(SPEC_DIR.glob("*.yaml"))
SPECS = {path.stem: yaml.safe_load(path.read_text()) for path in SPEC_FILES}


def _reference_path(name: str) -> Path:
    return (SPEC_DIR / SPECS[name]["reference"]).resolve()


def _reference_module(name: str, constants: dict[str, Any]) -> types.ModuleType:
    """Exec the reference as a fresh module, then rebind the size constants a shape overrides."""
    module = types.ModuleType(f"shipped_reference_{name}")
    exec(compile(_reference_path(name).read_text(), str(_reference_path(name)), "exec"), module.__dict__)
    for key, value in constants.items():
        setattr(module, key, value)
    return module


def _shape_constants(shape: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in shape.items() if k != "name"}


def _cases(name: str, key: str) -> list[dict[str, Any]]:
    """The shape cases of a spec's `key` list, a ranged constant's entry expanded, each with its name."""
    return [
        {"name": case, **params}
        for shape in SPECS[name][key]
        for case, params, _ in expand_entry(shape["name"], _shape_constants(shape))
    ]


def _tensors(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def test_at_least_forty_specs_including_the_required_families() -> None:
    assert len(SPECS) >= 40
    assert set(SPECS) >= REQUIRED_SPECS, f"missing: {sorted(REQUIRED_SPECS - set(SPECS))}"
    half = [name for name, data in SPECS.items() if data["dtype"] in ("float16", "bfloat16")]
    assert len(half) >= len(SPECS) // 2, "most real models run in bf16 or fp16"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_spec_yaml_is_well_formed(name: str) -> None:
    data = SPECS[name]
    assert isinstance(data, dict)
    assert REQUIRED_KEYS <= set(data) <= REQUIRED_KEYS | OPTIONAL_KEYS, sorted(set(data) ^ REQUIRED_KEYS)
    assert data["name"] == name
    assert isinstance(data["description"], str) and data["description"]
    assert _reference_path(name).is_file()
    assert data["dtype"] in DTYPES
    for key in TOLERANCE_KEYS & set(data):
        assert isinstance(data[key], (int, float)) and data[key] >= 0
    assert ("backward" in data) == name.startswith("train_"), "training specs, and only they, are train_*"
    assert data["backends"] and set(data["backends"]) <= {"triton", "cute"}
    assert data["tags"] and all(isinstance(t, str) and t for t in data["tags"])
    tree = ast.parse(_reference_path(name).read_text())
    constants = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, int)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for key in ("shapes", "cpu_shapes"):
        assert isinstance(data[key], list) and data[key]
        shapes = _cases(name, key)
        names = [s["name"] for s in shapes]
        assert len(set(names)) == len(names)
        for shape in shapes:
            overrides = _shape_constants(shape)
            assert overrides and set(overrides) <= constants, (
                f"{shape['name']}: {sorted(set(overrides) - constants)}"
            )
            assert all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in overrides.values())


@pytest.mark.parametrize("name", sorted(SPECS))
def test_reference_runs_at_cpu_shapes(name: str) -> None:
    dtype = getattr(torch, SPECS[name]["dtype"])
    for shape in _cases(name, "cpu_shapes"):
        module = _reference_module(name, _shape_constants(shape))
        torch.manual_seed(0)
        model = module.Model(*module.get_init_inputs()).to(dtype)
        torch.manual_seed(0)
        inputs = [t.to(dtype) if t.is_floating_point() else t for t in module.get_inputs()]
        torch.manual_seed(0)
        again = module.get_inputs()
        assert all(torch.equal(a, b.to(a.dtype)) for a, b in zip(inputs, again, strict=True)), (
            "get_inputs is not seed-determined"
        )
        with torch.no_grad():
            outputs = _tensors(model(*inputs))
        assert outputs, f"{name}/{shape['name']}: no tensor output"
        for out in outputs:
            assert out.numel() > 0 and torch.isfinite(out.float()).all(), f"{name}/{shape['name']}"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_spec_loads_and_gpu_shapes_validate(name: str) -> None:
    """The project's loader takes each spec on both platforms; GPU shapes check out on meta tensors."""
    cpu = load_spec_file(SPEC_DIR / f"{name}.yaml", load_platform("cpu"))
    gpu = load_spec_file(SPEC_DIR / f"{name}.yaml", load_platform("h200"))
    assert [s.name for s in cpu.shapes] == [s["name"] for s in _cases(name, "cpu_shapes")]
    assert [s.name for s in gpu.shapes] == [s["name"] for s in _cases(name, "shapes")]
    assert gpu.tags == tuple(SPECS[name]["tags"]) and gpu.dtype == SPECS[name]["dtype"]
    validate_reference(gpu)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_gpu_shapes_move_tens_of_mb_to_a_few_gb(name: str) -> None:
    """Inputs + parameters at each GPU shape, counted on meta tensors (no memory is used)."""
    itemsize = DTYPES[SPECS[name]["dtype"]]
    for shape in _cases(name, "shapes"):
        module = _reference_module(name, _shape_constants(shape))
        with torch.device("meta"):
            model = module.Model(*module.get_init_inputs())
            tensors = _tensors(module.get_inputs()) + list(model.parameters())
        size = sum(t.numel() * (itemsize if t.is_floating_point() else t.element_size()) for t in tensors)
        assert MIN_GPU_BYTES <= size <= MAX_GPU_BYTES, f"{name}/{shape['name']}: {size / 2**20:.0f} MiB"
        assert math.prod(tensors[0].shape) > 0
