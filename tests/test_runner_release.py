"""A judge gets its device memory back from every evaluation: runners drop what they mapped before they are
killed, the device lock is let go only once the runner is dead, and a judge left holding memory is
replaced (CUDA IPC keeps a block a killed runner mapped allocated in the judge for good)."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import pickle
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from kernelevolve.backends.triton import BACKEND
from kernelevolve.eval import device_memory, harness, runner, runner_client, shared_tensors, worker
from kernelevolve.eval.runner_channel import SEQUENCE
from kernelevolve.platforms import Platform
from kernelevolve.types import Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec, Status
from tests.gpu import TANH_CANDIDATE, tanh_reference

BIG_TANH_REFERENCE = tanh_reference(256 * 1024 * 1024)


@pytest.fixture(autouse=True)
def _interpreter() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        BACKEND.prepare_process("cpu")
        yield


class _Held:
    pass


def test_release_drops_models_and_every_mapped_tensor() -> None:
    served = runner._Runner()
    model, mapped = _Held(), _Held()
    served.models[0] = model
    shared_tensors._KEPT_CUDA.append(mapped)
    shared_tensors._MAPPED["a file"] = mapped
    watched = [weakref.ref(model), weakref.ref(mapped)]
    del model, mapped
    assert served.op_release({"op": "release"}) == {"ok": True}
    gc.collect()
    assert all(ref() is None for ref in watched)
    assert not shared_tensors._KEPT_CUDA and not shared_tensors._MAPPED


def test_ending_the_checks_drops_device_mappings_and_keeps_host_files() -> None:
    served = runner._Runner()
    device_tensor, host_file = _Held(), _Held()
    shared_tensors._KEPT_CUDA.append(device_tensor)
    shared_tensors._KEPT_BEFORE.append(_Held())
    shared_tensors._MAPPED["a file"] = host_file
    watched = weakref.ref(device_tensor)
    del device_tensor
    try:
        assert served.op_end_checks({"op": "end_checks"}) == {"ok": True}
        gc.collect()
        assert watched() is None
        assert not shared_tensors._KEPT_CUDA and not shared_tensors._KEPT_BEFORE
        assert shared_tensors._MAPPED["a file"] is host_file  # one mapping per file, reused by timing
    finally:
        shared_tensors.drop_mapped()


class _Recording:
    def __init__(self) -> None:
        self.ops: list[str] = []

    def request(self, message: dict, timeout: float) -> dict:
        self.ops.append(message["op"])
        return {"ok": True}


def test_small_or_host_checked_tensors_are_dropped_without_a_request() -> None:
    from kernelevolve.eval.remote import RemoteCandidate

    arena = shared_tensors.SharedArena("cpu")
    try:
        recording = _Recording()
        remote = RemoteCandidate(recording, 0, arena, deadline=1e18, where="")  # type: ignore[arg-type]
        remote.checked_inputs = [arena.empty_like(torch.zeros(4))]
        remote.end_checks()
        assert remote.checked_inputs is None and recording.ops == []
    finally:
        arena.close()


@pytest.mark.gpu
def test_large_checked_device_tensors_are_freed_with_the_runners_mappings() -> None:
    """The judge held an 8 GiB problem's checked inputs and slots, and its cache, into timing (65 GiB on an
    H100: the runner's output did not fit)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelevolve.eval.remote import RELEASE_BEFORE_TIMING_BYTES, RemoteCandidate

    arena = shared_tensors.SharedArena("cuda:0")
    try:
        recording = _Recording()
        remote = RemoteCandidate(recording, 0, arena, deadline=1e18, where="")  # type: ignore[arg-type]
        remote.checked_inputs = [
            arena.empty_like(torch.empty(RELEASE_BEFORE_TIMING_BYTES // 4, device="meta"))
        ]
        before = torch.cuda.memory_allocated()
        remote.end_checks()
        assert recording.ops == ["end_checks"]
        assert torch.cuda.memory_allocated() <= before - RELEASE_BEFORE_TIMING_BYTES
    finally:
        arena.close()


def test_a_requests_device_tensors_are_let_go_at_the_end_of_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    synchronised: list[bool] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: synchronised.append(True))
    judge_end, runner_end = multiprocessing.Pipe()
    mapped = _Held()
    shared_tensors._KEPT_CUDA.append(mapped)  # as a request's `TensorRef.open` leaves it
    watched = weakref.ref(mapped)
    del mapped
    alive_after: list[bool] = []
    ending = shared_tensors.end_request

    def ended() -> None:
        ending()
        alive_after.append(watched() is not None)

    monkeypatch.setattr(shared_tensors, "end_request", ended)
    for sequence in (1, 2):  # requests that fail (no model): their tensors are let go all the same
        judge_end.send_bytes(pickle.dumps({"op": "call", "index": 0, SEQUENCE: sequence}))
    judge_end.send_bytes(pickle.dumps({"op": "exit"}))
    runner.serve(runner_end)
    # kept through the next request (sent again there, a tensor keeps its address), then let go
    assert alive_after == [True, False]
    assert not shared_tensors._KEPT_CUDA and not shared_tensors._KEPT_BEFORE
    assert synchronised == [True, True]  # the device is done with them first


def test_an_idle_runner_releases_and_a_busy_one_is_not_asked() -> None:
    runners = runner_client.pool()
    taken = runners.take()
    try:
        assert taken.release_shared() is True
        taken.send({"op": "release"})  # a request whose reply is never read: the runner counts as busy
        assert taken.answered is False
        assert taken.release_shared() is False
    finally:
        runners.finish(taken)


def test_the_device_is_let_go_only_after_the_runner_is_dead(
    add_spec: KernelSpec,
    cpu_platform: Platform,
    fast_settings: EvalSettings,
    add_kernel: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[str] = []

    @contextlib.contextmanager
    def recorded(device: str, phases: dict[str, float], end_holder: object = None) -> Iterator[float]:
        events.append("device taken")
        try:
            yield 0.0  # seconds waited
        finally:
            events.append("device let go")

    finish = runner_client.RunnerPool.finish

    def finishing(
        self: runner_client.RunnerPool, taken: runner_client.Runner, phases: dict[str, float]
    ) -> list[int]:
        events.append("runner killed")
        return finish(self, taken, phases)

    monkeypatch.setattr(harness, "_device_held", recorded)
    monkeypatch.setattr(runner_client.RunnerPool, "finish", finishing)
    request = EvalRequest(Candidate(add_kernel(), "triton", "t"), add_spec, cpu_platform.name, fast_settings)
    report: EvalReport = harness.evaluate(request, cpu_platform)
    assert report.status is Status.OK, report.feedback
    assert events == ["device taken", "runner killed", "device let go"]


def test_a_judge_holding_device_memory_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    report = EvalReport(candidate_id="c", status=Status.OK)
    monkeypatch.setattr(device_memory, "device_memory_stranded", lambda device: True)
    assert worker._needs_recycle(report, "cuda:0") is True
    monkeypatch.setattr(device_memory, "device_memory_stranded", lambda device: False)
    assert worker._needs_recycle(report, "cuda:0") is False
    assert worker._needs_recycle(report, "cpu") is False
    assert device_memory.device_memory_stranded("cpu") is False


@pytest.mark.gpu
def test_a_gigabyte_evaluation_leaves_the_judge_nothing_allocated(monkeypatch: pytest.MonkeyPatch) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelevolve.platforms import load_platform
    from kernelevolve.types import ShapeCase

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    platform = load_platform("h100")
    spec = KernelSpec(name="big_tanh", reference_source=BIG_TANH_REFERENCE, shapes=(ShapeCase("default"),))
    settings = EvalSettings(
        correctness_trials=3, timing_trials=10, warmup_trials=2, measure_compile_baseline=False
    )
    before = torch.cuda.memory_allocated()
    report = harness.evaluate(
        EvalRequest(Candidate(TANH_CANDIDATE, "triton", "t"), spec, "h100", settings), platform
    )
    assert report.status is Status.OK, report.feedback
    leftover: Any = torch.cuda.memory_allocated() - before
    assert leftover < (256 << 20), f"{leftover / 2**30:.2f} GiB still allocated after a 1 GiB evaluation"
    assert not device_memory.device_memory_stranded("cuda:0")


@pytest.mark.gpu
def test_the_judges_peak_does_not_grow_with_its_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each trial's inputs and slots are freed: reference cycles in the judge's helpers and the runner's
    IPC mappings kept every trial's allocated until the evaluation ended (session 36: 19 input-sized
    blocks live at the judge's peak on a 4 GiB problem)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelevolve.platforms import load_platform
    from kernelevolve.types import ShapeCase

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    platform = load_platform("h100")
    spec = KernelSpec(name="big_tanh", reference_source=BIG_TANH_REFERENCE, shapes=(ShapeCase("default"),))
    peaks = []
    for trials in (2, 6):
        settings = EvalSettings(
            correctness_trials=trials,
            timing_trials=10,
            warmup_trials=2,
            measure_compile_baseline=False,
            reference_cache_mb=0,  # kept reference outputs grow with the trials by design
        )
        gc.collect()
        torch.cuda.ipc_collect()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        request = EvalRequest(Candidate(TANH_CANDIDATE, "triton", "t"), spec, "h100", settings)
        report = harness.evaluate(request, platform)
        assert report.status is Status.OK, report.feedback
        peaks.append((torch.cuda.max_memory_allocated() - before) / 2**30)
    assert peaks[1] <= peaks[0] + 0.5, f"the judge peaked at {peaks} GiB with 2 and 6 trials of a 1 GiB input"


def test_the_zygote_pays_tritons_cache_key_once_for_every_runner() -> None:
    """Triton hashes its own sources and libtriton for the first compile of each process (0.5 s): the
    zygote does it before forking, so no runner's precompile pays it."""
    from triton.runtime.cache import triton_key

    from kernelevolve.eval import runner_zygote

    triton_key.cache_clear()
    runner_zygote._preload()
    assert triton_key.cache_info().currsize == 1


def test_only_processes_the_pool_did_not_start_count_as_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner or spare of ours that dies late shows up among the zygote's strays; it escaped nothing."""
    pool = runner_client.RunnerPool()
    try:
        earlier = pool.take()
        taken = pool.take()
        earlier.kill()
        stranger = 2**22 + 12345  # a pid no runner of this pool had
        monkeypatch.setattr(pool, "_reap", lambda: [earlier.pid, stranger])
        assert pool.finish(taken) == [stranger]
    finally:
        pool.close()


def test_the_full_collection_runs_after_the_device_is_let_go(
    add_spec: KernelSpec,
    cpu_platform: Platform,
    fast_settings: EvalSettings,
    add_kernel: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A full collection takes a judge 0.1-0.3 s; it is no reason to keep the device from the others."""
    events: list[str] = []

    @contextlib.contextmanager
    def recorded(device: str, phases: dict[str, float], end_holder: object = None) -> Iterator[float]:
        try:
            yield 0.0  # seconds waited
        finally:
            events.append("device let go")

    real_collect = gc.collect

    def collect(generation: int = 2) -> int:
        events.append(f"collect {generation}")
        return real_collect(generation)

    monkeypatch.setattr(harness, "_device_held", recorded)
    monkeypatch.setattr(device_memory, "FULL_GC_EVERY", 1)
    monkeypatch.setattr(device_memory.gc, "collect", collect)
    request = EvalRequest(Candidate(add_kernel(), "triton", "t"), add_spec, cpu_platform.name, fast_settings)
    report = harness.evaluate(request, cpu_platform)
    assert report.status is Status.OK, report.feedback
    let_go = events.index("device let go")
    assert "collect 2" not in events[:let_go] and "collect 2" in events[let_go:]
    assert "collect 1" in events[:let_go]
    assert "full_gc" in report.phase_s


def test_runners_and_the_judge_compile_into_caches_of_their_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """A runner may write its compile caches; the judge's torch.compile baseline must not load what a runner
    left there, so the judge's caches move where no runner may write. Named at once, they also keep Inductor
    from naming TRITON_CACHE_DIR later, which changed the zygote's key and restarted it."""
    monkeypatch.setattr(runner_client, "_RUNNER_CACHES", {})
    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "kernelevolve"))
    monkeypatch.setenv("TRITON_CACHE_DIR", "/runners/triton")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    runners = runner_client.separate_caches()
    # Inductor's default is the temp folder, each runner's own: the runners share one beside the judge's
    assert runners == {
        "TRITON_CACHE_DIR": f"/runners/triton/{runner_client.RUNNERS_TRITON_FOLDER}",  # never the user's own
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "kernelevolve" / "runners" / "inductor"),
    }
    judge = tmp_path / "kernelevolve" / "judge"
    assert runner_client.os.environ["TRITON_CACHE_DIR"] == str(judge / "triton")
    assert runner_client.os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(judge / "inductor")
    key = runner_client._environment_key()
    runner_client.os.environ.setdefault("TRITON_CACHE_DIR", "/inductor/triton/0")  # what Inductor does
    assert runner_client._environment_key() == key
    assert runner_client.separate_caches() == runners  # once per process
    writable = harness._runner_writable_dirs("cpu")
    assert not any(str(judge).startswith(path) or path.startswith(str(judge)) for path in writable)


def test_no_runner_may_write_a_folder_holding_the_judges_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """A compile cache named above the working directory (runs, sweep records) or kernelevolve's cache
    (baselines) is not made writable to runners: what the judge reads back stays out of their reach."""
    monkeypatch.setattr(runner_client, "_RUNNER_CACHES", {})
    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "home" / "cache"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))  # the working directory itself
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "home"))  # above kernelevolve's cache
    writable = harness._runner_writable_dirs("cpu")
    assert str(tmp_path) not in writable and str(tmp_path / "home") not in writable
    assert writable  # the rest stays writable (/dev/null at least)


@pytest.mark.gpu
def test_warming_a_judge_on_the_gpu_raises_nothing(caplog: pytest.LogCaptureFixture) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    with caplog.at_level("INFO"):
        device_memory.warm_device("cuda:0")
    assert "warming cuda:0 failed" not in caplog.text


def test_warming_a_judge_imports_what_the_first_meta_op_needs() -> None:
    """The timing ring's slots are laid out on meta, whose first op imports sympy: seconds of a sweep's first
    locked evaluation on an H100 (experiments/adversarial_gpu, session 40). Warming pays it as the judge
    starts, and a machine without the device still gets the import before the device fails."""
    import subprocess
    import sys

    code = (
        "import sys; from kernelevolve.eval import device_memory; device_memory.warm_device('cuda:0'); "
        "print('torch.fx.experimental.symbolic_shapes' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "True", done.stderr[-2000:]
