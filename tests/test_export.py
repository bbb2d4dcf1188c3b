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
SEARCHED, OTHER_SEARCHED, UNSEEN, ELSEWHERE = (4, 32), (6, 32), (5, 32), (9, 32)


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
    # 5x32 shares 6x32's power-of-two bucket: tried once against the reference, then served; 9x32 has none.
    for shape, path in (
        (SEARCHED, "kernel:4x32"),
        (UNSEEN, "trial:6x32"),
        (UNSEEN, "kernel:6x32"),
        (OTHER_SEARCHED, "kernel:6x32"),
        (ELSEWHERE, "reference"),
    ):
        x = torch.randn(*shape)
        with torch.no_grad():
            torch.testing.assert_close(fast(x), norm(x), atol=1e-5, rtol=1e-5)
        assert op.calls[-1] == path
    assert op.counts == {"kernel:4x32": 1, "trial:6x32": 1, "kernel:6x32": 2, "reference": 1}
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
    unchecked = KernelOp.from_artifacts([wrong], verify=False, audit_every=0)
    x, y = torch.randn(64), torch.randn(64)
    torch.testing.assert_close(unchecked(x, y), x - y)  # what verification protects against


def test_schema_names_the_references_arguments_and_opcheck_passes(
    result: OptimizeResult, norm: RMSNorm
) -> None:
    op = result.custom_op()
    assert op.schema == f"{op.qualname}(Tensor x, Tensor weight, *, int config=0) -> Tensor"
    assert op.qualname.startswith("kernelevolve::rmsnorm")
    x = torch.randn(*SEARCHED, requires_grad=True)
    outcome = op.opcheck(x, state=[norm.weight], raise_exception=False)
    assert set(outcome.values()) == {"SUCCESS"}, outcome


def test_bucket_trials_keep_a_kernel_only_where_it_matched(
    cache: Path, add_spec: KernelSpec, add_kernel: Callable[..., str]
) -> None:
    """n64 and n100 searched; 60 shares n64's bucket, 120 n100's. A kernel that refuses other sizes
    (as a compiler seed's per-shape programs do) or computes wrongly at them never serves them."""

    def artifact(source: str, shape: str) -> Artifact:
        return Artifact(add_spec.key, add_spec.name, "cpu", "triton", shape, source, "hand", add_spec)

    refusing = add_kernel(
        prologue="if x.numel() != 64:\n    raise NotImplementedError(f'no program for {x.shape}')"
    )
    wrong_elsewhere = add_kernel(result="x + y + (n != 100)")
    op = KernelOp.from_artifacts([artifact(refusing, "n64"), artifact(wrong_elsewhere, "n100")])
    assert not op.disabled
    for n, paths in (
        (60, ["trial:n64", "reference"]),
        (120, ["trial:n100", "reference"]),
        (64, ["kernel:n64"]),
    ):
        for path in paths:
            x, y = torch.randn(n), torch.randn(n)
            torch.testing.assert_close(op(x, y), x + y)
            assert op.calls[-1] == path
    assert "NotImplementedError" in op.dispatcher.reasons[(0, (((60,), "torch.float32"),) * 2)]
    assert "differs" in op.dispatcher.reasons[(0, (((120,), "torch.float32"),) * 2)]
    right = KernelOp.from_artifacts([artifact(add_kernel(), "n100")])
    x, y = torch.randn(120), torch.randn(120)
    right(x, y)
    torch.testing.assert_close(right(x, y), x + y)
    assert list(right.calls) == ["trial:n100", "kernel:n100"]


def test_verification_checks_as_the_search_does(
    cache: Path, add_spec: KernelSpec, add_kernel: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness's input maker and trial seeds, the platform's trial count, the spec's tolerance."""
    from kernelevolve.eval import correctness, stages
    from kernelevolve.verify import platform_settings

    calls: list[tuple[Any, ...]] = []
    check = correctness.check_correctness

    def spy(*args: Any) -> Any:
        calls.append(args)
        return check(*args)

    monkeypatch.setattr(correctness, "check_correctness", spy)
    right = Artifact(add_spec.key, add_spec.name, "cpu", "triton", "n100", add_kernel(), "hand", add_spec)
    op = KernelOp.from_artifacts([right], verify=False)
    assert op.verify(seed=5) == {"n100": ""}
    (_, _, make_inputs, seeds, atol, rtol) = calls[0]
    trials = platform_settings("cpu").correctness_trials
    assert seeds == [stages.trial_seed(5, 1, t) for t in range(trials)]  # n100 is the spec's shape 1
    assert (atol, rtol) == (add_spec.atol, add_spec.rtol)
    namespace = op._namespace("n100")
    searched = stages.input_maker(namespace, "cpu", torch.float32)(seeds[0])
    for got, expected in zip(make_inputs(seeds[0]), searched, strict=True):
        assert torch.equal(got, expected)


class RoundingRMSNorm(torch.nn.Module):
    """The example's RMSNorm as it was: every step rounded to the input's dtype."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x: Any) -> Any:
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


# Plain PyTorch standing in for a Triton kernel that accumulates in fp32 and rounds once (the loader
# runs no static checks): more accurate than either reference.
FP32_RMSNORM = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight.float()
        return y.to(x.dtype)
"""


def _bf16_norm_op(cls: type, verify: bool) -> tuple[KernelOp, Any]:
    from kernelevolve.specs.module_spec import module_spec

    torch.manual_seed(3)
    module = cls(4096)
    with torch.no_grad():
        module.weight.uniform_(0.5, 1.5)  # as the example's model: a bf16 product with a rounding
    module = module.to(torch.bfloat16).eval()
    spec = module_spec(module, torch.randn(1024, 4096, dtype=torch.bfloat16))
    artifact = Artifact(spec.key, spec.name, "cpu", "triton", "1024x4096", FP32_RMSNORM, "hand", spec)
    return KernelOp.from_artifacts([artifact], verify=verify), module


def test_an_fp32_kernel_passes_reverification_against_the_example_rmsnorm_in_bf16(cache: Path) -> None:
    """bf16 at rtol 1e-2 leaves 1.3-2.6 ulps: the example's RMSNorm (fp32 inside, as LLaMA's) stays
    within 1 ulp of an fp32 kernel at any weights; rounding every step in bf16 drifts 2 ulps, which
    the search (weights all ones: an exact product) never saw and the load-time check did."""
    op, module = _bf16_norm_op(RMSNorm, verify=True)
    fast = op.wrap(module)  # verified with the module's own weights, perturbed
    assert not op.disabled, op.disabled
    x = torch.randn(1024, 4096, dtype=torch.bfloat16)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), module(x), atol=1e-2, rtol=1e-2)
    assert op.calls[-1] == "kernel:1024x4096"
    rounding, module = _bf16_norm_op(RoundingRMSNorm, verify=False)
    outcome = rounding.verify(seed=0, trials=5, state=list(module.parameters()))
    assert "mismatch" in outcome["1024x4096"] and "0.0625" in outcome["1024x4096"]


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


# ------------------------------------------------------------------------------------------ KernelBench format


def test_kernelbench_format_of_a_run_and_a_sweep(result: OptimizeResult, cache: Path, tmp_path: Path) -> None:
    """KernelBench's eval_results.json (problem id -> samples), kernel file names and baseline files."""
    import json

    from kernelevolve.export.kernelbench_format import problem_of

    assert problem_of({"name": "kb_L1_x", "origin": "kernelbench:L1/23", "description": "23_Softmax"}) == (
        "1",
        "23",
        "23_Softmax",
    )
    done = _cli("kernelbench", str(result.run_dir), "--out", str(tmp_path / "run"), cache=cache)
    assert done.returncode == 0, done.stderr
    entries = json.loads((tmp_path / "run" / "custom" / "eval_results.json").read_text())
    (sample,) = entries["rmsnorm"]
    assert sample["sample_id"] == 0 and sample["compiled"] and sample["correctness"]
    assert sample["runtime"] == pytest.approx(sum(s.kernel_ms or 0 for s in result.shapes))
    assert sample["runtime_stats"]["num_trials"] and sample["ref_runtime"] > 0
    assert sample["metadata"]["candidate_id"] == result.best_id
    kernel = tmp_path / "run" / "custom" / "level_custom_problem_rmsnorm_sample_0_kernel.py"
    assert kernel.read_text() == result.best_source
    eager = json.loads((tmp_path / "run" / "baseline_time_torch.json").read_text())
    assert set(eager["custom"]["rmsnorm.py"]) >= {
        "mean",
        "std",
        "min",
        "max",
        "num_trials",
        "hardware",
        "device",
    }

    sweep = tmp_path / "sweep"
    (sweep / "results").mkdir(parents=True)
    records = [
        {
            "level": 1,
            "problem_id": 3,
            "name": "3_Batched_matrix_multiplication",
            "run_dir": str(result.run_dir),
        },
        {
            "level": 1,
            "problem_id": 12,
            "name": "12_Matmul_with_diagonal_matrices_",
            "status": "no_correct_kernel",
            "correct": False,
            "run_dir": "/elsewhere/runs/L1_12",
            "evaluations_by_status": {"incorrect": 3, "compile_error": 1},
            "eager_ms": 2.5,
        },
    ]
    for record in records:
        (sweep / "results" / f"L1_{record['problem_id']}.json").write_text(json.dumps(record))
    done = _cli("kernelbench", str(sweep), "--out", str(tmp_path / "kb"), cache=cache)
    assert done.returncode == 0, done.stderr
    level = json.loads((tmp_path / "kb" / "level1" / "eval_results.json").read_text())
    assert list(level) == ["3", "12"]
    assert (
        level["3"][0]["correctness"]
        and (tmp_path / "kb" / "level1" / "level_1_problem_3_sample_0_kernel.py").is_file()
    )
    missing = level["12"][0]
    assert missing["compiled"] and not missing["correctness"] and missing["runtime"] == -1.0
    assert missing["ref_runtime"] == 2.5 and "not here" in missing["metadata"]["kernel_source"]
    eager = json.loads((tmp_path / "kb" / "baseline_time_torch.json").read_text())
    assert list(eager["level1"]) == ["3_Batched_matrix_multiplication.py"]
    bad = _cli("kernelbench", str(tmp_path / "run" / "custom"), "--out", str(tmp_path / "x"), cache=cache)
    assert bad.returncode == 2 and "neither a run directory" in bad.stderr
