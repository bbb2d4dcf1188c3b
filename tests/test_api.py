"""kernelevolve.optimize: shipped specs and nn.Modules end to end on the CPU platform, and the
module-to-reference conversion (sources, constants, helpers, constructor arguments, the errors)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for examples.transformer_block

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import kernelevolve  # noqa: E402
from examples.transformer_block.model import MLPBlock, RMSNorm, SwiGLU  # noqa: E402
from kernelevolve.api import (  # noqa: E402
    Budget,
    OptimizeResult,
    apply_spec_overrides,
    result_from_run,
    write_spec_file,
)
from kernelevolve.app import ConfigError  # noqa: E402
from kernelevolve.export.custom_op import interpreter_ready  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from kernelevolve.specs import reference  # noqa: E402
from kernelevolve.specs.loading import resolve_spec  # noqa: E402
from kernelevolve.specs.module_spec import ModuleSourceError, module_spec, reference_source  # noqa: E402
from kernelevolve.specs.reference_module import load_reference_module  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Conversion of an array with ndim > 0:DeprecationWarning")

# Few trials, no torch.compile baseline (Inductor's CPU build is slow), no knowledge base.
FAST = (
    "kb.enabled=false",
    "platform.eval.timing_trials=2",
    "platform.eval.correctness_trials=2",
    "platform.eval.warmup_trials=1",
    "platform.eval.measure_compile_baseline=false",
)

SCALE = 0.5


def _shift(x: torch.Tensor) -> torch.Tensor:
    return x + 1.0


class ScaledShift(nn.Module):
    """Uses a module-level constant and helper, and takes an integer index tensor."""

    def __init__(self, width: int):
        super().__init__()
        self.width = width
        self.bias = nn.Parameter(torch.zeros(width))

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return F.relu(_shift(x) * SCALE + self.bias)[index]


@pytest.fixture(scope="module", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Baselines, kernel files and past wins go to a temporary cache, not the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELEVOLVE_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


needs_interpreter = pytest.mark.skipif(
    not interpreter_ready(),
    reason="triton was imported in compiled mode; CPU kernels need TRITON_INTERPRET=1",
)


# ------------------------------------------------------------------------------------------ searches


@needs_interpreter
def test_optimize_shipped_spec_gives_a_drop_in_module(runs: Path) -> None:
    result = kernelevolve.optimize(
        "softmax", budget=Budget(max_evaluations=2), operators=["template"], run_root=runs, overrides=FAST
    )
    assert isinstance(result, OptimizeResult)
    assert result.found and result.backend == "triton"
    assert result.best_id == result.results["best"]["id"]
    assert result.run_dir.parent == runs and (result.run_dir / "best" / "kernel.py").is_file()
    assert [s.name for s in result.shapes] == ["cpu", "cpu_long"]
    assert all(s.kernel_ms and s.eager_ms and s.speedup_vs_eager for s in result.shapes)
    assert result.results["evaluations"] <= 2

    namespace = reference.load_reference(result.spec.reference_source)
    for shape in result.spec.shapes:
        reference.apply_shape(namespace, shape)
        x = reference.make_inputs(namespace, 123, "cpu", torch.float32)
        expected = namespace.Model()(*x)
        torch.testing.assert_close(result.as_module()(*x), expected, atol=1e-5, rtol=1e-5)
    # The same result again from the run directory alone.
    again = result_from_run(result.run_dir)
    assert again.best_id == result.best_id and again.best_source == result.best_source
    assert [s.compile_error for s in again.shapes] == ["", ""]
    # a shape whose torch.compile baseline failed says why
    results_file = result.run_dir / "results.json"
    results = json.loads(results_file.read_text())
    results["baselines"]["cpu_long"]["compile_error"] = "BackendCompilerFailed: no compiler"
    results_file.write_text(json.dumps(results))
    failed = result_from_run(result.run_dir)
    assert [s.compile_error for s in failed.shapes] == ["", "BackendCompilerFailed: no compiler"]


@needs_interpreter
def test_optimize_module_instance_as_module_matches(runs: Path) -> None:
    torch.manual_seed(3)
    norm = RMSNorm(48, eps=1e-5)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)  # not ones: the drop-in must carry these weights
    x = torch.randn(3, 5, 48)
    result = kernelevolve.optimize(
        norm, x, budget=2, operators=["fusion_seed"], run_root=runs, run_name="norm", overrides=FAST
    )
    assert result.run_dir == runs / "norm"
    assert result.spec.name == "rmsnorm" and result.spec.shapes[0].params == {
        "x_dim0": 3,
        "x_dim1": 5,
        "x_dim2": 48,
    }
    assert "get_init_inputs" in result.spec.reference_source and "[48, 1e-05]" in result.spec.reference_source
    fast = result.as_module()
    assert type(fast).__name__ == "ModelNew"
    torch.testing.assert_close(fast.state_dict()["weight"], norm.weight.detach())
    with torch.no_grad():
        torch.testing.assert_close(fast(x), norm(x), atol=1e-5, rtol=1e-5)
        y = torch.randn(3, 5, 48)
        torch.testing.assert_close(fast(y), norm(y), atol=1e-5, rtol=1e-5)
        for z in (torch.randn(2, 7, 48), torch.randn(9, 48)):  # shapes never searched: no kernel refusal
            torch.testing.assert_close(fast(z), norm(z), atol=1e-5, rtol=1e-5)
    assert list(fast.kernelevolve_dispatcher.calls) == [
        "kernel:best",
        "kernel:best",
        "reference",
        "reference",
    ]


# ------------------------------------------------------------------------------------------ module -> spec


def test_module_source_includes_helpers_constants_and_input_kinds() -> None:
    module = ScaledShift(6)
    x = torch.rand(4, 6)  # non-negative: the reference keeps it so
    index = torch.tensor([0, 3, 2])
    source = reference_source(module, (x, index))
    assert "class Model(nn.Module):" in source and "class ScaledShift" not in source
    assert "def _shift(x" in source and "SCALE = 0.5" in source
    assert "import torch.nn.functional as F" in source
    assert "torch.rand((x_dim0, x_dim1), dtype=torch.float32)" in source
    assert "torch.randint(0, 4, (index_dim0,), dtype=torch.int64)" in source
    namespace = load_reference_module(source)
    assert namespace.get_init_inputs() == [6]
    inputs = namespace.get_inputs()
    assert inputs[0].shape == (4, 6) and inputs[1].shape == (3,) and int(inputs[1].max()) < 4


def test_module_spec_shapes_from_more_inputs_and_nested_classes() -> None:
    torch.manual_seed(0)
    block = MLPBlock(16, 8)
    spec = module_spec(block, torch.randn(4, 16), init_inputs=[16, 8], more_inputs=[(torch.randn(7, 16),)])
    assert [s.name for s in spec.shapes] == ["4x16", "7x16"]
    assert spec.shapes[1].params == {"x_dim0": 7, "x_dim1": 16}
    # RMSNorm and SwiGLU, defined beside MLPBlock, come along before Model.
    source = spec.reference_source
    assert source.index("class RMSNorm") < source.index("class SwiGLU") < source.index("class Model")
    assert spec.dtype == "float32" and spec.origin.endswith("MLPBlock")
    with pytest.raises(ValueError, match="rank or dtype"):
        module_spec(block, torch.randn(4, 16), init_inputs=[16, 8], more_inputs=[torch.randn(2, 3, 16)])


def test_module_spec_errors_say_what_to_do() -> None:
    with pytest.raises(ModuleSourceError, match="init_inputs"):
        module_spec(MLPBlock(16, 8), torch.randn(2, 16))  # `dim`, `hidden` are not attributes
    with pytest.raises(ModuleSourceError, match="different state"):
        module_spec(MLPBlock(16, 8), torch.randn(2, 16), init_inputs=[16, 9])
    namespace: dict[str, object] = {}
    exec(
        "import torch.nn as nn\nclass Doubler(nn.Module):\n    def forward(self, x):\n        return 2 * x\n",
        namespace,
    )
    with pytest.raises(ModuleSourceError, match="cannot retrieve the source"):
        module_spec(namespace["Doubler"](), torch.randn(3))
    with pytest.raises(ModuleSourceError, match="float64"):
        module_spec(SwiGLU(), torch.randn(2, 4, dtype=torch.float64))


def test_spec_file_round_trip_keeps_the_spec_key(tmp_path: Path) -> None:
    """What optimize() writes for a KernelSpec resolves back to the same spec (same store key)."""
    cpu = load_platform("cpu")
    shipped = resolve_spec("softmax", cpu)
    changed = apply_spec_overrides(
        shipped, {"tags": ["softmax"], "shapes": [{"name": "tiny", "batch_size": 2, "dim": 64}], "atol": 1e-3}
    )
    assert changed.shapes[0].params == {"batch_size": 2, "dim": 64} and changed.key != shipped.key
    for spec in (shipped, changed):
        again = resolve_spec(str(write_spec_file(spec, tmp_path)), cpu)
        assert again.key == spec.key and again.shapes == spec.shapes and again.tags == spec.tags


def test_optimize_argument_errors(runs: Path) -> None:
    with pytest.raises(TypeError, match="KernelSpec, a spec name"):
        kernelevolve.optimize(42, run_root=runs)
    with pytest.raises(ValueError, match="nn.Module targets only"):
        kernelevolve.optimize("softmax", torch.randn(2, 2), run_root=runs)
    with pytest.raises(ValueError, match="needs example_inputs"):
        kernelevolve.optimize(SwiGLU(), run_root=runs)
    with pytest.raises(ConfigError, match="valid: .*h200"):
        kernelevolve.optimize("softmax", platform="tpu9", run_root=runs)
    with pytest.raises(ValueError, match="valid: name"):
        kernelevolve.optimize("softmax", spec_overrides={"colour": "red"}, run_root=runs)
    assert Budget.of(5) == Budget(max_evaluations=5)
    assert Budget.of({"seconds": 30}) == Budget(seconds=30)
    with pytest.raises(ValueError, match="max_evaluations, seconds"):
        Budget.of({"minutes": 3})


def test_compose_config_matches_the_cli_and_works_inside_a_hydra_app() -> None:
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from kernelevolve.api import compose_config
    from kernelevolve.paths import CONF_DIR

    cfg = compose_config("h200", "islands", ["search.termination.max_evaluations=7"])
    assert cfg["platform"]["name"] == "h200" and cfg["search"]["policy"] == "islands"
    assert cfg["search"]["termination"]["max_evaluations"] == 7
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        outer = GlobalHydra.instance().hydra
        assert compose_config()["platform"]["name"] == "cpu"
        assert GlobalHydra.instance().hydra is outer  # the app's Hydra is given back
    with pytest.raises(ConfigError, match="search.nope"):
        compose_config(overrides=["search.nope.deeper=1"])


def test_import_kernelevolve_stays_light() -> None:
    code = (
        "import sys, kernelevolve\n"
        "assert 'torch' not in sys.modules\n"
        "assert callable(kernelevolve.optimize)\n"
        "assert 'torch' not in sys.modules, 'optimize import pulled torch'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_readme_python_flow_runs_on_cpu_without_triton_interpret(tmp_path: Path) -> None:
    """examples/python_api.py, the README's flow, in a fresh process with TRITON_INTERPRET unset:
    optimize, as_module at a searched and an unsearched shape, the custom op under
    torch.compile(fullgraph=True) and opcheck, then lookup in the store optimize() filled."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["KERNELEVOLVE_CACHE"] = str(tmp_path / "cache")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python_api.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "as_module paths: ['kernel:best', 'trial:best']" in out
    assert "custom op kernelevolve::norm(Tensor x, Tensor weight, *, int config=0) -> Tensor" in out
    assert "opcheck passed" in out and "lookup: norm on cpu, candidate" in out
