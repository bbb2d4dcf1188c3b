"""Time spent waiting for a neighbour's hold on the device is not a candidate's time: the judge tells the
worker's parent as a wait begins and ends, and the parent's limit for the request stands still meanwhile;
the judge moves its own deadline likewise. Six evaluations sharing one GPU timed out an honest candidate
behind a hung one (experiments/adversarial_gpu, session 41)."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.eval import device_lock, worker
from tests.gpu import TANH_CANDIDATE, tanh_reference


@pytest.fixture
def lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv(device_lock.LOCK_DIR_ENV, str(tmp_path))
    yield tmp_path
    device_lock.on_wait(lambda seconds: None)


def _hold_for(key: str, seconds: float) -> threading.Thread:
    taken = threading.Event()

    def hold() -> None:
        with device_lock.hold(key):
            taken.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(5)
    return thread


def test_a_wait_is_told_to_the_listener_as_it_begins_and_ends(lock_dir: Path) -> None:
    heard: list[float | None] = []
    device_lock.on_wait(heard.append)
    holder = _hold_for("gpu-test", 0.8)
    with device_lock.hold("gpu-test") as waited:
        assert heard == [None, waited]
    holder.join()
    assert waited >= 0.6


def test_a_free_device_tells_the_listener_nothing(lock_dir: Path) -> None:
    heard: list[float | None] = []
    device_lock.on_wait(heard.append)
    with device_lock.hold("gpu-test"):
        pass
    assert heard == []


class _Child:
    """Stands for the spawned child: alive until killed."""

    pid = 0
    exitcode = -9

    def __init__(self) -> None:
        self.killed = False

    def is_alive(self) -> bool:
        return not self.killed

    def kill(self) -> None:
        self.killed = True

    def join(self, timeout: float | None = None) -> None:
        pass

    def close(self) -> None:
        pass


def _slot_answering(tmp_path: Path, messages: list[tuple[float, dict[str, Any]]]) -> worker.WorkerSlot:
    """A slot whose child sends `messages`, each after its delay, once it has the request."""
    slot = worker.WorkerSlot("w", "cpu", "cpu", tmp_path)
    parent, child = multiprocessing.Pipe(duplex=True)
    slot._process, slot._conn, slot.info = _Child(), parent, {"worker": "w"}
    slot._log_path = tmp_path / "w.log"
    slot._log_path.touch()
    slot._dump_stack = lambda: None  # type: ignore[method-assign]

    def answer() -> None:
        child.recv_bytes()
        for delay, message in messages:
            time.sleep(delay)
            try:
                child.send_bytes(json.dumps(message).encode())
            except OSError:  # the parent gave up and closed its end
                return

    threading.Thread(target=answer, daemon=True).start()
    return slot


_REPORT = {"op": "report", "report": {}}
_BEGUN = {"op": "device_wait", "state": "begun"}
_ENDED = {"op": "device_wait", "state": "ended", "seconds": 1.2}


def test_the_limit_stands_still_while_the_child_waits(tmp_path: Path) -> None:
    """A wait longer than the whole limit, then the work: the request still gets its own time."""
    slot = _slot_answering(tmp_path, [(0.2, _BEGUN), (1.2, _ENDED), (0.3, _REPORT)])
    outcome = slot.call({"op": "evaluate"}, timeout_s=0.8)
    assert outcome.kind == "reply" and outcome.reply == _REPORT


def test_without_a_wait_the_limit_holds(tmp_path: Path) -> None:
    slot = _slot_answering(tmp_path, [(1.2, _REPORT)])
    assert slot.call({"op": "evaluate"}, timeout_s=0.8).kind == "timeout"


@pytest.mark.parametrize(
    "notes",
    [
        [{"op": "device_wait", "state": "ended", "seconds": 60}],  # an end with no beginning
        [{"op": "device_wait", "seconds": 60}],
        [{"op": "device_wait", "state": "paused"}],
    ],
)
def test_a_malformed_note_extends_nothing(tmp_path: Path, notes: list[dict[str, Any]]) -> None:
    slot = _slot_answering(tmp_path, [(0.1, note) for note in notes] + [(1.2, _REPORT)])
    assert slot.call({"op": "evaluate"}, timeout_s=0.8).kind == "timeout"


def test_waits_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_lock, "MAX_WAIT_LIMITS", 1.0)
    slot = _slot_answering(tmp_path, [(0.05, _BEGUN), (3.0, _REPORT)])  # a wait that never ends
    started = time.monotonic()
    assert slot.call({"op": "evaluate"}, timeout_s=0.5).kind == "timeout"
    assert time.monotonic() - started < 2.0


@pytest.mark.gpu
def test_an_evaluation_behind_a_long_hold_keeps_its_own_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The device held past the candidate's whole limit: the evaluation waits, then gets its own time."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelevolve.eval import harness
    from kernelevolve.platforms import load_platform
    from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, ShapeCase, Status

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    platform = load_platform("h100")
    spec = KernelSpec(
        name="tanh", reference_source=tanh_reference(4096 * 1024), shapes=(ShapeCase("default"),)
    )
    settings = EvalSettings(timeout_s=10, timing_trials=10, warmup_trials=2, measure_compile_baseline=False)
    holder = _hold_for(device_lock.cuda_device_key("cuda:0"), 12.0)
    report = harness.evaluate(
        EvalRequest(Candidate(TANH_CANDIDATE, "triton", "t"), spec, "h100", settings), platform
    )
    holder.join()
    assert report.status is Status.OK, report.feedback
    assert report.phase_s["device_wait"] > 5  # the hold outlasted the limit the evaluation began with


def _holder_process(path: Path) -> subprocess.Popen[bytes]:
    """Another process holding the lock file at `path` until killed."""
    code = (
        "import fcntl, sys, time\n"
        f"handle = open({str(path)!r}, 'rb')\n"
        "fcntl.flock(handle.fileno(), fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(120)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline().strip() == b"held"
    return process


def test_the_kernels_lock_table_names_the_holder(lock_dir: Path) -> None:
    path = device_lock.lock_path("gpu-test")
    path.touch()
    assert device_lock.holders(path) == set()
    process = _holder_process(path)
    try:
        assert device_lock.holders(path) == {process.pid}
    finally:
        process.kill()
        process.wait()


def test_a_waiter_ends_a_holder_it_owns(lock_dir: Path) -> None:
    """A runner that took the device lock as it loaded: its judge, waiting, kills it and gets the device."""
    path = device_lock.lock_path("gpu-test")
    path.touch()
    process = _holder_process(path)
    ended: list[int] = []

    def end(pid: int) -> None:
        if pid == process.pid:
            ended.append(pid)
            process.kill()

    started = time.monotonic()
    with device_lock.hold("gpu-test", end):
        pass
    process.wait()
    assert ended == [process.pid] and time.monotonic() - started < 5


def test_a_holder_not_its_own_is_waited_for(lock_dir: Path) -> None:
    seen: list[int] = []
    holder = _hold_for("gpu-test", 0.8)  # a neighbour in this process: shown, not ended
    with device_lock.hold("gpu-test", seen.append) as waited:
        pass
    holder.join()
    assert waited >= 0.6 and set(seen) == {os.getpid()}


def _evaluate_holding(path: Path, platform_name: str, size: int) -> tuple[Any, float]:
    """A tanh candidate whose runner takes the lock at `path` as it loads (static checks off: `fcntl` is
    not an allowed import), evaluated here; its report and the seconds it took."""
    from kernelevolve.eval import harness
    from kernelevolve.platforms import load_platform
    from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, ShapeCase

    path.touch()
    source = f"import fcntl\n_HELD = open({str(path)!r}, 'rb')\nfcntl.flock(_HELD.fileno(), fcntl.LOCK_EX)\n"
    spec = KernelSpec(name="tanh", reference_source=tanh_reference(size), shapes=(ShapeCase("default"),))
    settings = EvalSettings(timeout_s=60, timing_trials=5, warmup_trials=1, measure_compile_baseline=False)
    candidate = Candidate(source + TANH_CANDIDATE, "triton", "held")
    started = time.monotonic()
    report = harness.evaluate(
        EvalRequest(candidate, spec, platform_name, settings), load_platform(platform_name)
    )
    return report, time.monotonic() - started


def test_a_candidate_holding_the_device_lock_is_ended(
    lock_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole path on the CPU, with the judge's hold made a real lock (on a GPU it is one): the runner
    holding it is killed by its judge's wait, and the evaluation fails saying so, in seconds, not limits."""
    from kernelevolve.eval import harness
    from kernelevolve.types import Status

    @contextlib.contextmanager
    def held(device: str, phases: dict[str, float], end_holder: Any = None) -> Iterator[float]:
        with device_lock.hold("gpu-test", end_holder) as waited:
            yield waited

    monkeypatch.setattr(harness, "_device_held", held)
    monkeypatch.setattr(harness, "_static_stage", lambda *args, **kwargs: None)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    report, seconds = _evaluate_holding(device_lock.lock_path("gpu-test"), "cpu", 1024)
    assert (report.status, report.error_name) == (Status.RUNTIME_ERROR, "device_lock_held"), report.feedback
    assert seconds < 30


@pytest.mark.gpu
def test_a_candidate_holding_the_gpus_lock_is_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the CPU test above, on the GPU's own lock: the runner's hold is found and ended."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelevolve.eval import harness
    from kernelevolve.types import Status

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(harness, "_static_stage", lambda *args, **kwargs: None)
    path = device_lock.lock_path(device_lock.cuda_device_key("cuda:0"))
    report, seconds = _evaluate_holding(path, "h100", 4096)
    assert (report.status, report.error_name) == (Status.RUNTIME_ERROR, "device_lock_held"), report.feedback
    assert seconds < 45
