"""One holder at a time for the GPU-executing part of an evaluation, across processes.

Several evaluation children may share one GPU so that one compiles and loads a candidate while
another runs it; only runs (correctness and timing, baselines) take this lock, so no measured
kernel shares the device with another evaluation's work. It also keeps two kernelevolve runs on
one machine from timing on the same GPU at once. The lock is an flock on a file named after the
GPU's UUID, released by the kernel if its holder dies.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

LOCK_DIR_ENV = "KERNELEVOLVE_LOCK_DIR"
_listener: list[Callable[[float | None], None]] = []


def on_wait(listener: Callable[[float | None], None]) -> None:
    """Have `listener` told of each wait for a device another holds: None as it begins, then the seconds it
    took once the device is held. The evaluation child reports both to its parent, whose time limit stands
    still meanwhile: a candidate's limit is for its own work, not for a neighbour holding the device (a hung
    one holds it for its whole limit, and several may be queued ahead)."""
    _listener[:] = [listener]


def wait_note(seconds: float | None) -> dict[str, Any]:
    """What the evaluation child tells its parent of a wait (`on_wait`): begun, or ended after `seconds`."""
    if seconds is None:
        return {"op": "device_wait", "state": "begun"}
    return {"op": "device_wait", "state": "ended", "seconds": round(seconds, 3)}


# An evaluation child's waits for its device add at most this many time limits to one request: a sweep's
# neighbours on one GPU (two problems, two children each) hold it for their own limits at most, and a
# request must end some time. (A runner can take the lock itself as it loads, reads of the lock file not
# being sandboxed: its judge ends it, `end_holder`.)
MAX_WAIT_LIMITS = 4.0


class Waits:
    """The time an evaluation child spent waiting for its device during one request, by its parent's clock:
    each wait from its "begun" note to its "ended" one (one still going counts to now), `cap` seconds at
    most."""

    def __init__(self, cap: float) -> None:
        self.cap = cap
        self.done = 0.0
        self.since: float | None = None

    def note(self, state: Any) -> None:
        now = time.monotonic()
        if state == "begun" and self.since is None:
            self.since = now
        elif state == "ended" and self.since is not None:
            self.done, self.since = self.done + now - self.since, None

    def total(self) -> float:
        going = 0.0 if self.since is None else time.monotonic() - self.since
        return min(self.cap, self.done + going)


def lock_path(device_key: str) -> Path:
    root = Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "kernelevolve-device-locks")
    root.mkdir(parents=True, exist_ok=True)
    return root / (re.sub(r"[^A-Za-z0-9_.-]", "_", device_key) + ".lock")


# How often a waiter with `end_holder` looks at who holds the device: a runner holding it is ended this soon.
WATCH_S = 0.25


def holders(path: Path) -> set[int]:
    """The processes holding a lock on the file at `path`, from the kernel's table (/proc/locks; empty where it
    cannot be read). Matched by inode alone (on overlay file systems the table's device need not be the one
    `stat` gives); waiters' lines ("->") are not holders."""
    try:
        inode = str(path.stat().st_ino)
        table = Path("/proc/locks").read_text()
    except OSError:
        return set()
    found = set()
    for line in table.splitlines():
        fields = line.split()  # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2146342 0 EOF"
        holds = len(fields) >= 6 and fields[1] != "->" and fields[4].isdigit()
        if holds and fields[5].rsplit(":", 1)[-1] == inode:
            found.add(int(fields[4]))
    return found


@contextlib.contextmanager
def _watching(path: Path, end_holder: Callable[[int], None] | None) -> Iterator[None]:
    """While the block waits for the lock, show `end_holder` each holder's pid every `WATCH_S`: the judge
    ends a holder that is its own runner (a candidate that took the lock as it loaded), which would otherwise
    keep the judge and the device waiting `MAX_WAIT_LIMITS` limits."""
    if end_holder is None:
        yield
        return
    acquired = threading.Event()

    def watch() -> None:
        while not acquired.wait(WATCH_S):
            for pid in holders(path):
                end_holder(pid)

    watcher = threading.Thread(target=watch, name="device-lock-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        acquired.set()
        watcher.join()


@contextlib.contextmanager
def hold(device_key: str, end_holder: Callable[[int], None] | None = None) -> Iterator[float]:
    """Hold the device's lock for the block; yields the seconds spent waiting for it. While it waits,
    `end_holder` is shown the holders' pids (`_watching`)."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): one evaluation child per device is the safe setting there
        yield 0.0
        return
    started = time.perf_counter()
    path = lock_path(device_key)
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            contended = False
        except BlockingIOError:
            contended = True
            for listener in _listener:
                listener(None)
            with _watching(path, end_holder):
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        waited = time.perf_counter() - started
        try:
            if contended:
                for listener in _listener:
                    listener(waited)
            yield waited
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def hold_device(device: str, end_holder: Callable[[int], None] | None = None) -> Iterator[float]:
    """`hold` for the GPU behind `device` ("cuda:N"); nothing to hold on the CPU or without a GPU
    (yields 0)."""
    if not device.startswith("cuda") or not _cuda_available():
        yield 0.0
        return
    with hold(cuda_device_key(device), end_holder) as waited:
        yield waited


def cuda_device_key(device: str) -> str:
    """A machine-wide name for the GPU behind `device` in this process: its UUID where torch has it."""
    import torch

    index = torch.device(device).index or 0
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid:
        return f"gpu-{uuid}"
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    physical = visible[index] if index < len(visible) else str(index)
    return f"gpu-{physical}"


def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())
