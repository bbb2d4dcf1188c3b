"""The judge's side of runners: a zygote per judge process, one fresh runner per candidate, a spare ready.

A runner is forked from the zygote (torch and Triton already imported) into its own session, so killing it
kills its process group; anything it detaches is reaped by the zygote afterwards and recorded as a
violation. The judge can stop a runner mid-request (SIGSTOP) to inspect the shared memory it writes.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from kernelevolve.eval.runner_channel import SEQUENCE, ReplyError, read_reply
from kernelevolve.eval.shared_tensors import shared_folder

log = logging.getLogger(__name__)

ZYGOTE_START_TIMEOUT_S = 120.0
# What the zygote's imports and the runners' behaviour depend on: a change starts a new zygote.
_ENVIRONMENT_KEYS = ("CUDA_VISIBLE_DEVICES", "TRITON_INTERPRET", "KERNELEVOLVE_SCRATCH", "TRITON_CACHE_DIR")


class RunnerGone(RuntimeError):
    """The runner died or closed its channel; `output` is the tail of what it wrote."""

    def __init__(self, message: str, output: str = "", exit_description: str = "") -> None:
        super().__init__(message)
        self.output = output
        self.exit_description = exit_description


class RunnerTimeout(RuntimeError):
    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class Runner:
    """One forked runner: its pid (its session and process group), channel and log."""

    DUMP_WAIT_S = 2.0

    def __init__(
        self,
        pid: int,
        conn: Connection,
        log_path: Path,
        shared_dir: Path,
        pool: RunnerPool | None = None,
        device: str = "cpu",
    ) -> None:
        self.pid = pid
        self.conn = conn
        self.log_path = log_path
        self.shared_dir = shared_dir  # where its evaluation's shared host tensors go: it may write there
        self.stopped = False
        self.device = device  # what it was forked for
        self.answered = True  # False from a request until its reply is read: the runner may be busy
        self.sequence = 0  # the last request's number, which its reply must echo
        self._pool = pool

    def send(self, message: dict[str, Any]) -> None:
        self.sequence += 1
        try:
            self.conn.send_bytes(pickle.dumps({**message, SEQUENCE: self.sequence}))
        except (OSError, ValueError) as exc:
            raise self.gone(f"the runner's channel is closed ({exc})") from None
        self.answered = False

    def read(self) -> dict[str, Any]:
        """The reply waiting on the channel (EOFError/OSError where it closed)."""
        reply = read_reply(self.conn, self.sequence)
        self.answered = True
        return reply

    def wait_reply(self, deadline: float) -> dict[str, Any]:
        """The reply to the last request, or RunnerTimeout (after a stack dump) / RunnerGone."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.dump_stack()
                raise RunnerTimeout("the runner did not answer in time", self.output())
            try:
                if self.conn.poll(min(remaining, 0.05)):
                    return self.read()
            except (EOFError, OSError):
                raise self.gone("the runner closed its channel") from None
            if not self.alive():
                raise self.gone("the runner died")

    def gone(self, message: str) -> RunnerGone:
        """RunnerGone with the exit code (once the zygote has reaped it) and the runner's last output."""
        description = self.exit_description() if not self.alive() or self._wait_exit() else ""
        return RunnerGone(message, self.output(), description)

    def _wait_exit(self, timeout_s: float = 1.0) -> bool:
        """A closed channel usually means an exit under way: wait a moment for it."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                return True
            time.sleep(0.01)
        return False

    def request(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.send(message)
        return self.wait_reply(time.monotonic() + timeout_s)

    def release_shared(self, timeout_s: float = 5.0) -> bool:
        """Ask an idle runner to drop the judge's device tensors it mapped; whether it did. CUDA IPC keeps a
        block allocated in the judge while a runner holds it, and a killed runner's references are never
        dropped: the judge would keep every input and slot of the evaluation (a busy or unwilling runner's
        are left for `device_memory.device_memory_stranded` to notice)."""
        if not self.answered or not self.alive():
            return False
        try:
            reply = self.request({"op": "release"}, timeout_s)
        except (RunnerGone, RunnerTimeout, ReplyError):
            return False
        return reply.get("ok") is True

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return _state(self.pid) not in ("Z", "X", "")

    def strays(self) -> list[int]:
        """Processes this runner started that are alive (zombies too): its descendants, and any orphan its
        zygote adopted (one forked and detached, whose parent exited)."""
        from kernelevolve.eval import containment

        orphans = self._pool.orphans() if self._pool is not None else []
        return sorted(set(containment.descendants_of(self.pid)) | set(orphans))

    def exit_description(self) -> str:
        """ "exit code N" or "exit code -N (SIGNAME)", as the zygote that reaped it saw it."""
        from kernelevolve.eval.worker import _exit_description

        code = self._pool.exit_code(self.pid) if self._pool is not None else None
        return _exit_description(code)

    def pause(self) -> None:
        """Freeze the runner (SIGSTOP): nothing it does can change shared memory until `resume`."""
        os.kill(self.pid, signal.SIGSTOP)
        self.stopped = True
        _wait_stopped(self.pid)

    def resume(self) -> None:
        if self.stopped:
            os.kill(self.pid, signal.SIGCONT)
            self.stopped = False

    def dump_stack(self) -> None:
        """Ask a hung runner for its Python stack (faulthandler on SIGUSR1) before it is killed."""
        if not self.alive():
            return
        size = self.log_path.stat().st_size if self.log_path.exists() else 0
        try:
            os.kill(self.pid, signal.SIGUSR1)
        except OSError:
            return
        deadline = time.monotonic() + self.DUMP_WAIT_S
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.log_path.stat().st_size if self.log_path.exists() else 0
            if now > size:
                time.sleep(0.2)
                return

    def output(self, lines: int = 24) -> str:
        """The end of what the runner wrote; a stack dump cut to the candidate's frames, its paths shown
        as candidate.py."""
        from kernelevolve.eval.worker import output_excerpt

        try:
            text = self.log_path.read_bytes()[-(64 << 10) :].decode(errors="replace")
        except OSError:
            return ""
        return output_excerpt(text, lines)

    def kill(self) -> list[int]:
        """Kill the runner, its process group and every descendant; returns the pids killed."""
        from kernelevolve.eval import containment

        with contextlib.suppress(OSError):
            self.conn.close()
        killed = containment.kill_tree(self.pid)
        with contextlib.suppress(OSError):
            self.log_path.unlink()
        import shutil

        shutil.rmtree(self.shared_dir, ignore_errors=True)
        return killed


class RunnerPool:
    """Runners for this (judge) process: one zygote, one warm spare. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._zygote: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._key: tuple[str, ...] = ()
        self._spare: Runner | None = None
        self._log_dir = Path(tempfile.mkdtemp(prefix="kernelevolve-runners-"))
        self.escaped: list[int] = []  # processes that outlived their runner, killed by `reap`
        separate_caches()
        self._forked: set[int] = set()  # every runner and spare this pool started
        atexit.register(self.close)

    def take(self, device: str = "cpu", sandbox: Sandbox | None = None) -> Runner:
        """A fresh runner for `device`, sandboxed as `sandbox` says (the spare if its environment, device
        and sandbox still hold); the next spare is forked now and, on a GPU, creates its CUDA context
        while this one works, so no evaluation pays for a context while it holds the device."""
        with self._lock:
            key = (*_environment_key(), json.dumps(sandbox.to_json() if sandbox else None), device)
            spare, self._spare = self._spare, None
            if spare is not None and (key != self._key or not spare.alive()):
                spare.kill()
                spare = None
            runner = spare or self._fork(key)
            try:
                self._spare = self._fork(key)
            except RunnerGone:
                self._spare = None
            return runner

    def prewarm(self) -> None:
        """Start the zygote now (its imports take seconds): an evaluation child does this as it starts,
        beside the baselines, so no search evaluation waits for it."""
        with self._lock:
            self._ensure_zygote((*_environment_key(), "null", ""))

    def finish(self, runner: Runner, phases: dict[str, float] | None = None) -> list[int]:
        """Kill a runner after its evaluation; returns the pids of processes it left behind (killed).
        Adds the seconds its release and its death took to `phases` ("release", "kill")."""
        phases = {} if phases is None else phases
        started = time.perf_counter()
        if runner.device.startswith("cuda"):
            runner.release_shared()
        released = time.perf_counter()
        killed = [pid for pid in runner.kill() if pid != runner.pid]
        with self._lock:
            # A runner or spare of ours that died late (its reap timed out, a spare that failed to start)
            # turns up among the zygote's strays too: it escaped nothing.
            escaped = [pid for pid in self._reap() if pid not in self._forked]
        phases["release"] = phases.get("release", 0.0) + released - started
        phases["kill"] = phases.get("kill", 0.0) + time.perf_counter() - released
        left = sorted((set(killed) | set(escaped)) - {runner.pid})
        self.escaped.extend(left)
        return left

    def close(self) -> None:
        atexit.unregister(self.close)
        with self._lock:
            if self._spare is not None:
                self._spare.kill()
                self._spare = None
            self._stop_zygote()
        import shutil

        shutil.rmtree(self._log_dir, ignore_errors=True)

    # ------------------------------------------------------------------------------ internals
    def _fork(self, key: tuple[str, ...]) -> Runner:
        control = self._ensure_zygote(key)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        log_path = self._log_dir / f"runner-{time.monotonic_ns()}.log"
        shared_dir = shared_folder()
        sandbox = json.loads(key[-2])
        if sandbox is not None:  # the runner may write its own shared folder besides what the judge allows
            sandbox["writable_dirs"] = [str(shared_dir), *sandbox["writable_dirs"]]
            if sandbox.get("private_tmp"):  # and its temporary files go there too
                sandbox["private_tmp"] = str(shared_dir / "tmp")
        try:
            fork = {"op": "fork", "log": str(log_path), "device": key[-1], "sandbox": sandbox}
            request = json.dumps(fork).encode()
            socket.send_fds(control, [request], [theirs.fileno()])
            reply = _read_line(control)
        except OSError as exc:
            ours.close()
            self._stop_zygote()
            raise RunnerGone(f"the runner zygote is gone ({exc})", _tail(self._zygote_log)) from None
        finally:
            theirs.close()
        self._forked.add(int(reply["pid"]))
        return Runner(int(reply["pid"]), Connection(ours.detach()), log_path, shared_dir, self, key[-1])

    def orphans(self) -> list[int]:
        """The zygote's children that are not runners it forked: processes a runner detached."""
        from kernelevolve.eval import containment

        zygote = self._zygote
        if zygote is None:
            return []
        return [pid for pid in containment.children_of(zygote.pid) if pid not in self._forked]

    def exit_code(self, pid: int) -> int | None:
        """A dead runner's exit code, from the zygote that reaped it (None: not known)."""
        with self._lock:
            if self._control is None:
                return None
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                try:
                    self._control.sendall(json.dumps({"op": "status", "pid": pid}).encode())
                    status = _read_line(self._control).get("status")
                except OSError:
                    return None
                if isinstance(status, int):
                    return status
                time.sleep(0.02)  # it may not have been reaped yet
            return None

    def _reap(self) -> list[int]:
        if self._control is None:
            return []
        keep = [self._spare.pid] if self._spare is not None else []
        try:
            self._control.sendall(json.dumps({"op": "reap", "keep": keep}).encode())
            reply = _read_line(self._control)
        except OSError:
            return []
        return [int(pid) for pid in reply.get("killed", [])]

    @property
    def _zygote_log(self) -> Path:
        return self._log_dir / "zygote.log"

    def _ensure_zygote(self, key: tuple[str, ...]) -> socket.socket:
        if (
            self._zygote is not None
            and self._zygote.poll() is None
            and key[:-2] == self._key[:-2]
            and self._control
        ):
            self._key = key
            return self._control
        self._stop_zygote()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # glibc fills every heap allocation of the runners with 0xFE bytes (a huge negative float32, NaN
        # in 16-bit floats) and serves allocations up to 32 MB from the heap: an output a candidate
        # writes only in part cannot pass by the zeros fresh pages would hold.
        environment = {
            **{k: v for k, v in os.environ.items() if k not in _CACHE_VARIABLES},
            **separate_caches(),  # the runners' compile caches, never the judge's
            "MALLOC_PERTURB_": "1",
            "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
        }
        # the zygote imports kernelevolve from wherever this process did (a Ray actor's working
        # directory need not be the checkout)
        package_root = str(Path(__file__).resolve().parents[2])
        environment["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, os.environ.get("PYTHONPATH")) if p
        )
        with open(self._zygote_log, "ab") as out:
            self._zygote = subprocess.Popen(
                [sys.executable, "-m", "kernelevolve.eval.runner_zygote", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                cwd=os.getcwd(),
                env=environment,
            )
        theirs.close()
        self._control, self._key = ours, key
        return ours

    def _stop_zygote(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._zygote is not None:
            if self._zygote.poll() is None:
                self._zygote.kill()
            self._zygote.wait(timeout=10)
            self._zygote = None


@dataclass(frozen=True)
class Sandbox:
    """What a runner is confined to, applied at its start (while it has one thread, as Landlock needs)."""

    writable_dirs: tuple[str, ...] = ()
    host_memory_bytes: int | None = None
    private_tmp: bool = False  # temporary files in the runner's own folder, not the machine's temp folder
    single_process: bool = False  # no processes started (seccomp): the CPU platform, where nothing compiles

    def to_json(self) -> dict[str, Any]:
        return {
            "writable_dirs": list(self.writable_dirs),
            "host_memory_bytes": self.host_memory_bytes,
            "private_tmp": self.private_tmp,
            "single_process": self.single_process,
        }


_CACHE_VARIABLES = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")
RUNNERS_TRITON_FOLDER = "kernelevolve_runners"  # the runners' Triton cache, inside the user's
_RUNNER_CACHES: dict[str, str] = {}  # what runners compile into, once `separate_caches` has run


def separate_caches() -> dict[str, str]:
    """Give runners and this process (the judge) compiler caches of their own; returns the runners'.

    Runners must write a compile cache (Triton's, Inductor's) and the judge compiles torch.compile's
    baseline: sharing one, a runner could leave a kernel there that the baseline later loads (a slow one
    makes every speedup against it look larger). Runners' Triton cache is a folder inside the one this
    process was given (or the default): Triton looks kernels up at <cache>/<hash>/, so the user's other
    Triton programs and exported ops never load what a runner wrote (round 23). The judge's move under
    kernelevolve's cache, which no runner may write. Named now, they also keep Inductor from naming
    TRITON_CACHE_DIR on its first compile, which changed the zygote's key and restarted it.
    """
    if _RUNNER_CACHES:
        return dict(_RUNNER_CACHES)
    from kernelevolve.paths import cache_dir

    home = os.environ.get("TRITON_HOME") or os.path.expanduser("~")
    user = os.environ.get("TRITON_CACHE_DIR") or os.path.join(home, ".triton", "cache")
    runners = {"TRITON_CACHE_DIR": os.path.join(user, RUNNERS_TRITON_FOLDER)}
    # Inductor's default is the temp folder, each runner's own: one they share, beside (never in) the judge's
    runners["TORCHINDUCTOR_CACHE_DIR"] = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or str(
        cache_dir() / "runners" / "inductor"
    )
    judge = cache_dir() / "judge"
    for name, folder in (("TRITON_CACHE_DIR", "triton"), ("TORCHINDUCTOR_CACHE_DIR", "inductor")):
        os.environ[name] = str(judge / folder)
    _RUNNER_CACHES.update(runners)
    return dict(runners)


def _environment_key() -> tuple[str, ...]:
    return tuple(os.environ.get(name, "") for name in _ENVIRONMENT_KEYS)


def _read_line(control: socket.socket) -> dict[str, Any]:
    control.settimeout(ZYGOTE_START_TIMEOUT_S)
    data = b""
    while not data.endswith(b"\n"):
        chunk = control.recv(1 << 16)
        if not chunk:
            raise OSError("the zygote closed its control socket")
        data += chunk
    reply: dict[str, Any] = json.loads(data.decode())
    return reply


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _state(pid: int) -> str:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return text[text.rfind(")") + 2 :].split(" ", 1)[0]


def _wait_stopped(pid: int, timeout_s: float = 1.0) -> None:
    """SIGSTOP is asynchronous: wait until the kernel reports the process stopped."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and _state(pid) not in ("T", "t", "Z", "X", ""):
        time.sleep(0.0005)


_POOL: RunnerPool | None = None
_POOL_LOCK = threading.Lock()


def pool() -> RunnerPool:
    """This process's runner pool (one per judge process)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = RunnerPool()
        return _POOL
