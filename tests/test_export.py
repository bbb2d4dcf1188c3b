"""Exporting winners: the torch.library custom op (dispatch by shape, fallback, torch.compile tracing,
autograd, re-verification on load) and the SQLite artifact store with its CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for examples.transformer_block

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: CPU kernels interpret
pytest.importorskip("triton")

import kernelevolve  # noqa: E402
from examples.transformer_block.model import RMSNorm  # noqa: E402
from kernelevolve.api import OptimizeResult  # noqa: E402
from kernelevolve.export.custom_op import KernelOp, KernelVerificationError, interpreter_ready  # noqa: E402
from kernelevolve.export.store import ALL_SHAPES, Artifact, ArtifactStore, artifacts_from_run, lookup  # noqa: E402
from kernelevolve.types import KernelSpec  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:Conversion of an array with ndim > 0:DeprecationWarning"),
    pytest.mark.skipif(
        not interpreter_ready(), reason="triton imported in compiled mode; needs TRITON_INTERPRET=1"
    ),
]
FAST = (
    "kb.enabled=false",
    "platform.eval.timing_trials=2",
    "platform.eval.correctness_trials=2",
    "platform.eval.warmup_trials=1",
    "platform.eval.measure_compile_baseline=false",
)
SEARCHED, OTHER_SEARCHED, UNSEEN = (4, 32), (6, 32), (5, 32)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELEVOLVE_CACHE", str(path))
        yield path


@pytest.fixture(scope="module")
def norm() -> RMSNorm:
    torch.manual_seed(11)
    module = RMSNorm(32)
    with torch.no_grad():
        module.weight.uniform_(0.5, 1.5)
    return module.eval()


@pytest.fixture(scope="module")
def result(cache: Path, norm: RMSNorm, tmp_path_factory: pytest.TempPathFactory) -> OptimizeResult:
    """One real search: an RMSNorm at two shapes (4x32 and 6x32), Triton seeds from the fusion compiler."""
    found = kernelevolve.optimize(
        norm,
        torch.randn(*SEARCHED),
        more_inputs=[torch.randn(*OTHER_SEARCHED)],
        budget=2,
        operators=["fusion_seed"],
        run_root=tmp_path_factory.mktemp("runs"),
        overrides=FAST,
    )
    assert found.found
    return found


def _graph_ops(module: Any, x: Any) -> list[str]:
    """Targets of the call_function nodes Dynamo captures (fullgraph: any graph break raises)."""
    captured: list[str] = []

    def backend(gm: Any, example_inputs: Any) -> Callable[..., Any]:
        captured.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(module, backend=backend, fullgraph=True)
    with torch.no_grad():
        compiled(x)
    return captured


# ------------------------------------------------------------------------------------------ custom op


def test_custom_op_serves_searched_shapes_and_falls_back_elsewhere(
    result: OptimizeResult, norm: RMSNorm
) -> None:
    op = result.custom_op()
    assert set(op.kernels) == {"4x32", "6x32"} and not op.disabled
    fast = op.wrap(norm)
    assert isinstance(fast, RMSNorm) and fast.weight is norm.weight  # same class family, shared weights
    assert list(fast.state_dict()) == list(norm.state_dict())
    for shape, path in ((SEARCHED, "kernel:4x32"), (UNSEEN, "reference"), (OTHER_SEARCHED, "kernel:6x32")):
        x = torch.randn(*shape)
        with torch.no_grad():
            torch.testing.assert_close(fast(x), norm(x), atol=1e-5, rtol=1e-5)
        assert op.calls[-1] == path
    assert op.counts == {"kernel:4x32": 1, "reference": 1, "kernel:6x32": 1}
    x = torch.randn(*SEARCHED)
    with torch.no_grad():
        torch.testing.assert_close(op(x, state={"weight": norm.weight}), norm(x), atol=1e-5, rtol=1e-5)
    assert op.calls[-1] == "kernel:4x32"
    # Another dtype is another signature: the reference serves it.
    with torch.no_grad():
        out = op(x.double(), state=[norm.weight.double()])
    assert op.calls[-1] == "reference" and out.dtype == torch.float64


def test_torch_compile_traces_through_the_op_without_graph_breaks(
    result: OptimizeResult, norm: RMSNorm
) -> None:
    op = KernelOp.from_run(result.run_dir)
    fast = op.wrap(norm)
    x = torch.randn(*SEARCHED)
    explanation = torch._dynamo.explain(fast)(x)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1
    targets = _graph_ops(fast, x)
    assert any(op.name in t for t in targets), targets
    assert not any("rsqrt" in t for t in targets)  # the reference math is inside the op, not traced
    torch._dynamo.reset()
    compiled = torch.compile(fast, backend="eager", fullgraph=True)
    before = len(op.calls)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), norm(x), atol=1e-5, rtol=1e-5)
    assert list(op.calls)[before:] == ["kernel:4x32"]


def test_backward_goes_through_the_reference(result: OptimizeResult, norm: RMSNorm) -> None:
    op = result.custom_op(verify=False)
    fast = op.wrap(norm)
    x = torch.randn(*SEARCHED, requires_grad=True)
    fast(x).pow(2).sum().backward()
    got_x, got_w = x.grad.clone(), norm.weight.grad.clone()
    x.grad, norm.weight.grad = None, None
    norm(x).pow(2).sum().backward()
    torch.testing.assert_close(got_x, x.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_w, norm.weight.grad, atol=1e-5, rtol=1e-5)
    norm.weight.grad = None


def test_verification_disables_or_rejects_a_wrong_kernel(
    cache: Path, add_spec: KernelSpec, add_kernel: Callable[..., str]
) -> None:
    def artifact(source: str, shape: str) -> Artifact:
        return Artifact(add_spec.key, add_spec.name, "cpu", "triton", shape, source, "hand", add_spec)

    wrong = artifact(add_kernel(result="x - y"), "n64")
    right = artifact(add_kernel(), "n100")
    op = KernelOp.from_artifacts([wrong, right])
    assert set(op.disabled_shapes()) == {"n64"} and "mismatch" in op.disabled_shapes()["n64"]
    x, y = torch.randn(64), torch.randn(64)
    torch.testing.assert_close(op(x, y), x + y)  # the reference serves the disabled shape
    assert op.calls[-1] == "reference"
    x, y = torch.randn(100), torch.randn(100)
    torch.testing.assert_close(op(x, y), x + y)
    assert op.calls[-1] == "kernel:n100"
    with pytest.raises(KernelVerificationError, match="n64"):
        KernelOp.from_artifacts([wrong], on_mismatch="raise")
    unchecked = KernelOp.from_artifacts([wrong], verify=False)
    x, y = torch.randn(64), torch.randn(64)
    torch.testing.assert_close(unchecked(x, y), x - y)  # what verification protects against


# ------------------------------------------------------------------------------------------ store


def _cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KERNELEVOLVE_CACHE": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "kernelevolve.export", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_store_cli_add_list_show_get(result: OptimizeResult, cache: Path, tmp_path: Path) -> None:
    store = tmp_path / "kernels.sqlite"
    added = _cli("add", str(result.run_dir), "--store", str(store), cache=cache)
    assert added.returncode == 0, added.stderr
    assert "added *, 4x32, 6x32" in added.stdout
    again = _cli("add", str(result.run_dir), "--store", str(store), cache=cache)
    assert "nothing new" in again.stdout
    listed = _cli("list", "--store", str(store), "--platform", "cpu", cache=cache)
    assert listed.returncode == 0 and listed.stdout.count("rmsnorm") == 3
    target = tmp_path / "kernel.py"
    got = _cli("--store", str(store), "get", "rmsnorm", "--platform", "cpu", "-o", str(target), cache=cache)
    assert got.returncode == 0, got.stderr
    assert target.read_text() == result.best_source
    shown = _cli("show", result.spec.key, "--shape", "6x32", "--store", str(store), cache=cache)
    assert (
        shown.returncode == 0
        and "shape                6x32" in shown.stdout
        and "@triton.jit" in shown.stdout
    )
    missing = _cli("get", "rmsnorm", "--platform", "h200", "--store", str(store), cache=cache)
    assert missing.returncode == 1 and "no stored kernel" in missing.stderr
    bad = _cli("add", str(tmp_path), "--store", str(store), cache=cache)
    assert bad.returncode == 2 and "not a finished kernelevolve run" in bad.stderr

    # The same store from Python, as a build pipeline would use it.
    overall = lookup(result.spec, "cpu", store=store)
    assert overall is not None and overall.shape == ALL_SHAPES and overall.candidate_id == result.best_id
    at_shape = lookup("rmsnorm", "cpu", "4x32", store=store)
    assert at_shape is not None and at_shape.kernel_ms and at_shape.spec.key == result.spec.key
    assert lookup("rmsnorm", "h200", store=store) is None and lookup("softmax", "cpu", store=store) is None
    op = KernelOp.from_store("rmsnorm", "cpu", store=store)
    assert set(op.kernels) == {"4x32", "6x32"}


def test_store_keeps_the_faster_kernel(result: OptimizeResult, cache: Path, tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "s.sqlite")
    best = next(a for a in artifacts_from_run(result.run_dir) if a.all_shapes)
    assert store.add(best)
    slower = Artifact(
        **{**best.__dict__, "candidate_id": "slower", "speedup_vs_eager": (best.speedup_vs_eager or 1) / 2}
    )
    assert not store.add(slower)
    assert store.lookup(best.spec_key, "cpu").candidate_id == best.candidate_id  # type: ignore[union-attr]
    assert store.add(slower, force=True)
    assert store.lookup(best.spec_key, "cpu").candidate_id == "slower"  # type: ignore[union-attr]
    faster = Artifact(**{**best.__dict__, "candidate_id": "faster", "speedup_vs_eager": 99.0})
    assert store.add(faster) and [a.candidate_id for a in store.find(best.spec_key)] == ["faster"]
