"""LocalEvaluator on the CPU: real child processes, timeouts, crashes, baselines cache, re-verification."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kernelevolve.eval.baselines import BaselineCache
from kernelevolve.eval.local import LocalEvaluator, normalise_devices
from kernelevolve.eval.stages import trial_seed
from kernelevolve.platforms import Platform
from kernelevolve.types import Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec, Status


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("kernelevolve-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELEVOLVE_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def evaluator(
    cpu_platform: Platform, fast_settings: EvalSettings, cache_root: Path
) -> Iterator[LocalEvaluator]:
    with LocalEvaluator(cpu_platform, fast_settings) as local:
        yield local


@pytest.fixture(scope="module")
def one_shape_spec(add_spec: KernelSpec) -> KernelSpec:
    """Children are slow to start on a shared 2-core machine: one shape keeps each evaluation short."""
    return replace(add_spec, name="tiny_add_one_shape", shapes=add_spec.shapes[-1:])


@pytest.fixture()
def submit(
    evaluator: LocalEvaluator, one_shape_spec: KernelSpec, fast_settings: EvalSettings
) -> Callable[..., EvalReport]:
    def run(source: str, **settings: object) -> EvalReport:
        request = EvalRequest(
            Candidate(source, "triton", "test"), one_shape_spec, "cpu", replace(fast_settings, **settings)
        )
        return evaluator.submit(request).result(timeout=300)

    return run


def test_hang_times_out_and_the_next_candidate_is_evaluated(
    submit: Callable[..., EvalReport], add_kernel
) -> None:
    first = submit(add_kernel())
    assert first.status is Status.OK, first.feedback
    hung = submit(add_kernel(prologue="while True:\n    pass"), timeout_s=4.0)
    assert hung.status is Status.TIMEOUT
    assert "4 s limit" in hung.feedback
    # Where it was stuck: the loop's two lines, `while True:` and `pass`.
    assert re.search(r'File "candidate.py", line 2[34] in forward', hung.feedback), hung.feedback
    after = submit(add_kernel())
    assert after.status is Status.OK, after.feedback
    # the judge killed the hung runner itself and stays: every candidate gets a fresh runner anyway
    assert after.worker == first.worker


def test_exit_and_segfault_are_worker_crashes_and_the_next_candidate_is_evaluated(
    submit: Callable[..., EvalReport],
    add_kernel,
    one_shape_spec: KernelSpec,
    fast_settings: EvalSettings,
    cpu_platform: Platform,
) -> None:
    # The static checks refuse os._exit (of `os`, only the environment, paths and constants)...
    exited = submit("import os\n" + add_kernel(prologue="os._exit(3)"))
    assert exited.status is Status.REJECTED_STATIC, exited.feedback
    # ...and without them the runner's exit is a worker crash, its code reported (the judge in this process).
    from kernelevolve.eval import harness

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(harness, "_static_stage", lambda *args, **kwargs: None)
        patch.setenv("TRITON_INTERPRET", "1")
        source = "import os\n" + add_kernel(prologue="os._exit(3)")
        request = EvalRequest(Candidate(source, "triton", "test"), one_shape_spec, "cpu", fast_settings)
        exited = harness.evaluate(request, cpu_platform)
    assert exited.status is Status.WORKER_CRASH and "exit code 3" in exited.feedback, exited.feedback
    # A real kernel bug: a store far outside any allocation kills the process with SIGSEGV.
    segfault = submit(add_kernel(extra_store="tl.store(out_ptr + offs + (1 << 44), x, mask=mask)"))
    assert segfault.status is Status.WORKER_CRASH
    assert "SIGSEGV" in segfault.feedback and "candidate.py" in segfault.feedback
    after = submit(add_kernel())
    assert after.status is Status.OK, after.feedback


def test_baselines_are_measured_then_read_from_the_cache(
    evaluator: LocalEvaluator, add_spec: KernelSpec, cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelevolve.eval import baselines as baseline_cache

    monkeypatch.setattr(baseline_cache, "busy_host", lambda: "")  # a quiet host, whatever CI's load
    baselines = evaluator.baselines(add_spec, "cpu")
    assert set(baselines) == {"n64", "n100"}
    assert all(b.eager.method == "wall" and b.eager.median_ms > 0 for b in baselines.values())
    files = list((cache_root / "baselines").glob("tiny_add-*.json"))
    assert len(files) == 1
    # Mark the cached file: a second call can only return the mark if it read the cache.
    data = json.loads(files[0].read_text())
    data["baselines"]["n64"]["eager"]["median_ms"] = 123.0
    files[0].write_text(json.dumps(data))
    assert evaluator.baselines(add_spec, "cpu")["n64"].eager.median_ms == 123.0
    with pytest.raises(ValueError, match="this evaluator runs 'cpu'"):
        evaluator.baselines(add_spec, "h100")


def test_excessive_speedup_is_reverified_on_a_fresh_worker(
    submit: Callable[..., EvalReport], add_kernel
) -> None:
    report = submit(add_kernel(), max_speedup=0.0)
    assert report.status is Status.OK, report.feedback
    assert "excessive_speedup" in report.flags and "reverified" in report.flags
    assert set(report.baselines) == {"n100"}


def test_result_that_only_holds_for_the_first_seed_fails_reverification(
    submit: Callable[..., EvalReport], add_kernel, one_shape_spec: KernelSpec, fast_settings: EvalSettings
) -> None:
    # A kernel that is wrong only for inputs beyond a bound that the original seed's trials never
    # reach but the re-verification seed's do.
    condition = _condition_between_seeds(one_shape_spec, fast_settings)
    report = submit(add_kernel(result=f"tl.where({condition}, x, x + y)"), max_speedup=0.0)
    assert report.status is Status.INCORRECT, report.feedback
    # the timed calls' checks and the decoy calls after the checks (fresh values every call) may catch it
    # before the re-verification does
    assert "failed_reverification" in report.flags or report.error_name in (
        "timed_output_mismatch",
        "kernel_share_decoy_wrong",
    )


def _condition_between_seeds(spec: KernelSpec, settings: EvalSettings) -> str:
    from kernelevolve.specs.reference import apply_shape, load_reference, make_inputs, torch_dtype

    module = load_reference(spec.reference_source)

    def x_range(seed: int) -> tuple[float, float]:
        lows, highs = [], []
        for index, shape in enumerate(spec.shapes):
            apply_shape(module, shape)
            for trial in range(settings.correctness_trials):
                x = make_inputs(module, trial_seed(seed, index, trial), "cpu", torch_dtype("float32"))[0]
                lows.append(float(x.min()))
                highs.append(float(x.max()))
        return min(lows), max(highs)

    (low, high), (low_next, high_next) = x_range(settings.seed), x_range(settings.seed + 1)
    if low_next < low:
        return f"x < {low!r}"
    assert high_next > high, "the re-verification inputs must leave the original inputs' range"
    return f"x > {high!r}"


def test_cpu_baselines_timed_on_a_busy_host_are_not_cached(
    evaluator: LocalEvaluator, add_spec: KernelSpec, cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelevolve.eval import baselines as baseline_cache

    monkeypatch.setattr(baseline_cache.os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    monkeypatch.setattr(baseline_cache.os, "cpu_count", lambda: 2)
    assert baseline_cache.busy_host() == "load average 9.0 on 2 core(s)"
    spec = replace(add_spec, name="busy_host_add")  # a cache file of its own
    first = evaluator.baselines(spec, "cpu")
    assert not list((cache_root / "baselines").glob("busy_host_add-*.json"))  # nothing kept for later runs
    assert evaluator.baselines(spec, "cpu") == first  # this run measures once
    monkeypatch.setattr(baseline_cache.os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    assert baseline_cache.busy_host() == ""


def test_devices_are_validated(cpu_platform: Platform) -> None:
    assert normalise_devices(cpu_platform, None) == ["cpu"]
    with pytest.raises(ValueError, match="devices must be"):
        normalise_devices(cpu_platform, ["cuda:0"])


def test_cache_ignores_other_settings(
    add_spec: KernelSpec, cache_root: Path, fast_settings: EvalSettings
) -> None:
    from kernelevolve.eval.baselines import BaselineKey

    environment = {"device_name": "cpu", "torch": "x", "triton": "y"}
    cache = BaselineCache(cache_root / "isolated")
    key = BaselineKey.make(add_spec, "cpu", fast_settings, environment)
    assert cache.get(key) is None
    other = BaselineKey.make(add_spec, "cpu", replace(fast_settings, timing_trials=7), environment)
    assert cache.path(key) != cache.path(other)


def test_device_pinning_maps_through_inherited_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelevolve.eval.worker import pin_device

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert pin_device("cuda:1") == "cuda:0"
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")  # a Ray actor: its one GPU named by physical id
    assert pin_device("cuda:3") == "cuda:0" and os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert pin_device("cuda:5") == "cuda:0" and os.environ["CUDA_VISIBLE_DEVICES"] == "5"
    assert pin_device("cpu") == "cpu" and os.environ["CUDA_VISIBLE_DEVICES"] == ""


def test_the_cpu_judge_times_with_one_intra_op_thread(
    submit: Callable[..., EvalReport], add_kernel, evaluator: LocalEvaluator
) -> None:
    # beside a busy process a second intra-op thread made a small eager op wait a scheduler slice; the
    # thread count is in the baseline cache's key, so baselines timed with another count are not reused
    assert submit(add_kernel()).status is Status.OK
    assert evaluator._environment is not None
    assert evaluator._environment["device_name"] == "cpu, 1 intra-op thread(s)"


def test_gpu_child_compiles_triton_even_if_the_parent_interprets(monkeypatch: pytest.MonkeyPatch) -> None:
    """A TRITON_INTERPRET inherited from the user's shell must not turn GPU timings into interpreter runs."""
    from kernelevolve.backends import get_backend

    backend = get_backend("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    backend.prepare_process("cuda:0")
    assert "TRITON_INTERPRET" not in os.environ
    backend.prepare_process("cpu")
    assert os.environ["TRITON_INTERPRET"] == "1"


def test_running_out_of_device_memory_is_retried_on_a_fresh_child(
    submit: Callable[..., EvalReport], add_kernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelevolve.eval import local

    monkeypatch.setattr(local, "OUT_OF_MEMORY_PAUSE_S", 0.0)
    starved = submit(
        add_kernel(prologue='raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 7 GiB")'),
        strict=False,  # the strict checks would reject the torch call before it runs
    )
    assert starved.status is Status.RUNTIME_ERROR and starved.error_name == "OutOfMemoryError"
    assert local.OUT_OF_MEMORY_FLAG in starved.flags  # retried, then recorded as it came
    plain_failure = submit(add_kernel(prologue='raise ValueError("not a memory problem")'))
    assert local.OUT_OF_MEMORY_FLAG not in plain_failure.flags
    assert submit(add_kernel()).status is Status.OK
