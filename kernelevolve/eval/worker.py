"""The evaluation child: pins its device, prepares backends, then serves requests from a Pipe.

Started with the 'spawn' method by `kernelevolve.eval.local`. This module imports nothing heavy
at module level: CUDA_VISIBLE_DEVICES and the backends' environment (TRITON_INTERPRET on CPU)
must be set before torch and triton are imported.

Messages are JSON texts (bytes over the pipe). Requests:
  {"op": "evaluate", "request": EvalRequest.to_json(), "platform": name}
  {"op": "baselines", "spec": KernelSpec.to_json(), "settings": EvalSettings.to_json(), "platform": name}
  {"op": "profile", "request": EvalRequest.to_json(), "platform": name}   (a winner's GPU time split)
  {"op": "stop"}
Replies: {"op": "ready", "info": {...}} once at start; {"op": "report", "report": ..., "recycle": bool};
{"op": "baselines", "baselines": {...}}; {"op": "profile", "split": {...} | null};
{"op": "error", "kind": "spec" | "internal", "error": text}. Before a reply, any number of pairs
{"op": "device_wait", "state": "begun"}, {"op": "device_wait", "state": "ended", "seconds": s}: a wait for
another evaluation's hold on the device, during which the request's time limit stands still
(`device_lock.on_wait`).
"""

from __future__ import annotations

import faulthandler
import json
import logging
import multiprocessing
import os
import re
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from kernelevolve.eval import device_lock

log = logging.getLogger(__name__)

SCRATCH_ENV = "KERNELEVOLVE_SCRATCH"
# Errors after which a CUDA context may be unusable: the child is replaced.
_CUDA_TROUBLE = re.compile(
    r"CUDA error|cuda runtime error|illegal memory access|device-side assert|misaligned address|"
    r"unspecified launch failure|CUBLAS_STATUS|cudaError|out of memory|an illegal instruction",
    re.IGNORECASE,
)


def pin_device(device: str) -> str:
    """Restrict this process to one device through the environment; returns the local device name."""
    kind, _, index = device.partition(":")
    if kind == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # CPU platform: candidates must not reach a GPU
        # One intra-op thread (runners inherit it): beside a busy process a small op's parallel region
        # waits a scheduler slice for its second thread, and an eager softmax timed 7.9 ms instead of
        # 6 us (experiments/cpu_baseline_threads/).
        os.environ["OMP_NUM_THREADS"] = "1"
        return "cpu"
    # "cuda:N" means what torch means in the parent: the N-th device it can see. Where the parent
    # already had CUDA_VISIBLE_DEVICES (Ray sets it to physical ids), map N through it; an N past
    # its end that names one of its ids is taken as that physical id (Ray's one-GPU actors).
    inherited = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    position = int(index or 0)
    if not inherited:
        chosen = str(position)
    elif position < len(inherited):
        chosen = inherited[position]
    elif str(position) in inherited:
        chosen = str(position)
    else:
        raise ValueError(f"device {device} is not among the visible devices {inherited}")
    os.environ["CUDA_VISIBLE_DEVICES"] = chosen
    return f"{kind}:0"


def _redirect_output(log_path: str | None) -> None:
    """Send stdout/stderr (and fault dumps) to a file the parent reads when we crash or hang."""
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    faulthandler.enable(file=sys.stderr, all_threads=True)
    if hasattr(signal, "SIGUSR1"):  # the parent asks for a stack dump before killing a hung child
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)


def worker_main(conn: Connection, device: str, platform_name: str, log_path: str | None = None) -> None:
    """Entry point of the spawned child."""
    local_device = pin_device(device)
    if local_device == "cpu" and "torch" in sys.modules:  # imported before the pin: the variable came late
        sys.modules["torch"].set_num_threads(1)
    if log_path:  # scratch files (candidate sources) go where the parent cleans up, even after a kill
        scratch = Path(log_path).parent / f"scratch-{os.getpid()}"
        scratch.mkdir(parents=True, exist_ok=True)
        os.environ[SCRATCH_ENV] = str(scratch)
    _redirect_output(log_path)
    from kernelevolve.eval import containment

    # The judge: runners run as the same user, and must not read this process's memory or ptrace it.
    containment.not_dumpable()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    from kernelevolve.backends import get_backend
    from kernelevolve.platforms import load_platform

    platform = load_platform(platform_name)
    for name, support in platform.backends.items():
        if support == "none":
            continue
        try:
            get_backend(name).prepare_process(local_device)
        except (ImportError, KeyError) as exc:  # a backend module not present in this install
            log.info("backend %s not prepared: %s", name, exc)
    from kernelevolve.eval import device_memory, harness, runner_client
    from kernelevolve.eval.baselines import environment_info

    runner_client.pool().prewarm()
    device_memory.warm_device(local_device)
    device_lock.on_wait(lambda seconds: _send(conn, device_lock.wait_note(seconds)))

    info = environment_info(local_device)
    info["worker"] = harness.worker_label(device)
    info["pid"] = str(os.getpid())
    _send(conn, {"op": "ready", "info": info})
    platforms = {platform.name: platform}
    while True:
        try:
            message = json.loads(conn.recv_bytes().decode())
        except (EOFError, OSError):
            return  # the parent went away
        if message.get("op") == "stop":
            _exit_now()
        _send(conn, _handle(message, platforms, local_device, device))
        sys.stdout.flush()
        sys.stderr.flush()


def _exit_now() -> None:
    """Leave on the parent's stop: the exit handlers run (the runner pool kills its zygote and spare,
    temporary folders go), then the process ends without tearing down the interpreter, which with torch
    and Triton loaded takes one to two seconds of native work that every evaluator's close waited for."""
    import atexit

    atexit._run_exitfuncs()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _handle(
    message: dict[str, Any], platforms: dict[str, Any], local_device: str, device: str
) -> dict[str, Any]:
    from kernelevolve.eval import baseline_timing, harness
    from kernelevolve.platforms import load_platform
    from kernelevolve.specs.reference import ReferenceSpecError
    from kernelevolve.types import EvalRequest, EvalSettings, KernelSpec

    op = message.get("op")
    try:
        name = message["platform"]
        if name not in platforms:
            platforms[name] = load_platform(name)
        platform = platforms[name]
        if op == "evaluate":
            request = EvalRequest.from_json(message["request"])
            report = harness.evaluate(request, platform, local_device, harness.worker_label(device))
            return {
                "op": "report",
                "report": report.to_json(),
                "recycle": _needs_recycle(report, local_device),
            }
        if op == "baselines":
            spec = KernelSpec.from_json(message["spec"])
            settings = EvalSettings.from_json(message["settings"])
            baselines = baseline_timing.measure_baselines(spec, platform, settings, local_device)
            return {"op": "baselines", "baselines": {k: v.to_json() for k, v in baselines.items()}}
        if op == "profile":
            return {"op": "profile", "split": _profile_in_runner(message, platform, local_device)}
        return {
            "op": "error",
            "kind": "internal",
            "error": f"unknown op {op!r}; valid: evaluate, baselines, profile, stop",
        }
    except ReferenceSpecError as exc:
        return {"op": "error", "kind": "spec", "error": str(exc)}
    except Exception:
        return {"op": "error", "kind": "internal", "error": traceback.format_exc()}


def _profile_in_runner(message: dict[str, Any], platform: Any, local_device: str) -> Any:
    """A winner's time split, measured in a fresh runner: profiling imports the candidate, which this
    process (the judge) never does. A measurement, not a verdict: a failure gives None."""
    from kernelevolve.eval import runner_client
    from kernelevolve.types import EvalRequest

    request = EvalRequest.from_json(message["request"])
    runners = runner_client.pool()
    runner = runners.take(local_device)
    try:
        reply = runner.request(
            {
                "op": "profile",
                "request": message["request"],
                "platform": platform.name,
                "device": local_device,
            },
            request.settings.timeout_s,
        )
        split = reply.get("split") if reply.get("ok") is True else None
        return split if isinstance(split, dict) else None
    except (runner_client.RunnerGone, runner_client.RunnerTimeout, ValueError) as exc:
        log.warning("profiling %s failed in its runner: %s", request.candidate.id, exc)
        return None
    finally:
        runners.finish(runner)


def _needs_recycle(report: Any, local_device: str) -> bool:
    from kernelevolve.eval import device_memory
    from kernelevolve.types import Status

    if local_device.startswith("cuda"):
        try:
            stranded = device_memory.device_memory_stranded(local_device)
        except Exception:  # noqa: BLE001 - a device this process can no longer use: replace it
            return True
        if stranded:
            log.info("replacing this evaluation child: device memory its runner held stays allocated here")
            return True
    if not local_device.startswith("cuda") or report.status not in (
        Status.RUNTIME_ERROR,
        Status.COMPILE_ERROR,
    ):
        return False
    if _CUDA_TROUBLE.search(report.feedback) or _CUDA_TROUBLE.search(report.error_name):
        return True
    try:  # a sticky error shows up on the next synchronising call
        import torch

        torch.cuda.synchronize()
        torch.ones(1, device=local_device).add_(1).item()
    except Exception:
        return True
    return False


def _send(conn: Connection, message: dict[str, Any]) -> None:
    conn.send_bytes(json.dumps(message).encode())


# ---------------------------------------------------------------------------------------------
# Parent side: one child process and the pipe to it, driven by one thread of the evaluator.

_CANDIDATE_PATH = re.compile(r'"[^"\n]*kernelevolve_kernel_[0-9a-f]+_[0-9a-f]+\.py"')


class WorkerStartError(RuntimeError):
    """A child could not be started (an environment problem, not a candidate fault)."""


@dataclass(frozen=True)
class CallOutcome:
    kind: str  # "reply", "timeout" or "crash"
    reply: dict[str, Any] = field(default_factory=dict)
    output: str = ""  # the child's own output for feedback: a stack dump, a fatal-error report
    exit_description: str = ""
    worker: str = ""
    wall_s: float = 0.0


class WorkerSlot:
    """A respawnable evaluation child pinned to `device`. Not thread-safe: one driver thread each."""

    STARTUP_TIMEOUT_S = 300.0
    DUMP_WAIT_S = 3.0

    def __init__(self, name: str, device: str, platform_name: str, log_dir: Path) -> None:
        self.name = name
        self.device = device
        self.platform_name = platform_name
        self.log_dir = log_dir
        self.info: dict[str, str] | None = None
        self._process: Any = None
        self._conn: Connection | None = None
        self._log_path: Path | None = None
        self._generation = 0

    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def start(self) -> dict[str, str]:
        """Spawn the child unless it is running; wait until it has imported and prepared everything."""
        if self.alive() and self.info is not None:
            return self.info
        self.stop()
        context = multiprocessing.get_context("spawn")
        parent_conn, child_conn = context.Pipe(duplex=True)
        self._generation += 1
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.name)
        self._log_path = self.log_dir / f"{safe}-{self._generation}.log"
        self._log_path.touch()
        process = context.Process(
            target=worker_main,
            args=(child_conn, self.device, self.platform_name, str(self._log_path)),
            name=f"kernelevolve-worker-{safe}",
            daemon=True,  # never outlives the driver
        )
        process.start()
        child_conn.close()
        self._process, self._conn = process, parent_conn
        deadline = time.monotonic() + self.STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if parent_conn.poll(0.2):
                try:
                    message = json.loads(parent_conn.recv_bytes().decode())
                except (EOFError, OSError):
                    break
                if message.get("op") == "ready":
                    self.info = {str(k): str(v) for k, v in message["info"].items()}
                    return self.info
            elif not process.is_alive():
                break
        description = _exit_description(self._finish())
        raise WorkerStartError(
            f"evaluation worker on {self.device} did not start ({description}):\n{self._output(0, tail=True)}"
        )

    def call(self, message: dict[str, Any], timeout_s: float) -> CallOutcome:
        """Send one request and wait for its reply, the child's death, or `timeout_s` (not counting the
        child's waits for its device)."""
        self.start()
        assert self._conn is not None and self._log_path is not None and self.info is not None
        worker = self.info.get("worker", self.name)
        offset = self._log_path.stat().st_size
        start = time.monotonic()
        try:
            self._conn.send_bytes(json.dumps(message).encode())
        except (OSError, ValueError):
            return self._crashed(offset, worker, start)
        waits = device_lock.Waits(timeout_s * device_lock.MAX_WAIT_LIMITS)
        while True:
            remaining = start + timeout_s + waits.total() - time.monotonic()
            if remaining <= 0:
                self._dump_stack()
                output = self._output(offset, tail=False)
                self._finish()
                return CallOutcome("timeout", output=output, worker=worker, wall_s=time.monotonic() - start)
            if self._conn.poll(min(remaining, 0.25)):
                try:
                    reply = json.loads(self._conn.recv_bytes().decode())
                except (EOFError, OSError):
                    return self._crashed(offset, worker, start)
                if reply.get("op") == "device_wait":  # not the candidate's time (`device_lock.on_wait`)
                    waits.note(reply.get("state"))
                    continue
                return CallOutcome("reply", reply=reply, worker=worker, wall_s=time.monotonic() - start)
            if not self._process.is_alive():
                return self._crashed(offset, worker, start)

    def restart(self) -> None:
        """Stop the child; the next call starts a fresh one."""
        self.stop()

    def stop(self) -> None:
        if self._conn is not None and self.alive():
            try:
                self._conn.send_bytes(json.dumps({"op": "stop"}).encode())
                self._process.join(timeout=5)
            except (OSError, ValueError):
                pass
        self._finish()

    # ------------------------------------------------------------------------------ helpers
    def _crashed(self, offset: int, worker: str, start: float) -> CallOutcome:
        code = self._finish()  # reaped: everything it wrote is in the file
        return CallOutcome(
            "crash",
            output=self._output(offset, tail=False),
            exit_description=_exit_description(code),
            worker=worker,
            wall_s=time.monotonic() - start,
        )

    def _dump_stack(self) -> None:
        """Ask a hung child for its Python stack (faulthandler on SIGUSR1) before it is killed."""
        if not self.alive() or not hasattr(signal, "SIGUSR1") or self._log_path is None:
            return
        size = self._log_path.stat().st_size
        try:
            os.kill(self._process.pid, signal.SIGUSR1)
        except OSError:
            return
        # Wait until the dump has started and then stopped growing (a loaded machine writes slowly).
        deadline = time.monotonic() + self.DUMP_WAIT_S
        stable_since: float | None = None
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self._log_path.stat().st_size
            if now == size:
                if stable_since is not None and time.monotonic() - stable_since > 0.25:
                    return
                continue
            size, stable_since = now, time.monotonic()

    def _finish(self) -> int | None:
        """Kill the child if needed, reap it, close the pipe; returns its exit code."""
        process, self._process = self._process, None
        self.info = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if process is None:
            return None
        if process.is_alive():
            process.kill()
        process.join(timeout=10)
        code: int | None = process.exitcode
        if code is not None:
            process.close()
        return code

    def _output(self, offset: int, tail: bool, lines: int = 24) -> str:
        if self._log_path is None or not self._log_path.exists():
            return ""
        text = self._log_path.read_bytes()[offset:].decode(errors="replace")
        return output_excerpt(text, lines, tail)


def output_excerpt(text: str, lines: int = 24, tail: bool = False) -> str:
    """What a dead or hung process wrote, for feedback: from a fatal-error report or stack dump on, its
    headers, innermost frames and candidate frames; else the last lines. Candidate paths as candidate.py."""
    marker = -1
    for needle in ("Fatal Python error", "Current thread", "(most recent call first)"):
        found = text.find(needle)
        if found >= 0:
            marker = text.rfind("\n", 0, found) + 1
            break
    if marker >= 0 and not tail:
        chosen = _useful_frames(text[marker:].splitlines())[:lines]
    else:
        chosen = text.splitlines()[-lines:]
    return _CANDIDATE_PATH.sub('"candidate.py"', "\n".join(chosen))


def _useful_frames(dump: list[str]) -> list[str]:
    """From a faulthandler dump keep headers, the innermost frame and the candidate's frames."""
    kept: list[str] = []
    innermost = True
    for line in dump:
        is_frame = line.lstrip().startswith("File ")
        if not is_frame:
            innermost = True
            if line.strip():
                kept.append(line)
        elif innermost or "kernelevolve_kernel_" in line:
            kept.append(line)
            innermost = False
    return kept


def _exit_description(code: int | None) -> str:
    if code is None:
        return "exit code unknown"
    if code < 0:
        try:
            return f"exit code {code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"exit code {code}"
    return f"exit code {code}"
