"""LocalEvaluator: evaluation children on this machine, one thread driving each.

Each worker slot owns one spawned child (`kernelevolve.eval.worker`) pinned to one device. A
request that overruns its time limit gets the child's stack dumped (for feedback) and the child
killed and replaced (TIMEOUT); a child that dies is replaced (WORKER_CRASH, exit code in the
feedback); after a CUDA-ish runtime error the child is replaced too, since the context may be
poisoned. Results faster than `settings.max_speedup` x eager are re-run on a fresh child with a
different seed before they are returned.
"""

from __future__ import annotations

import atexit
import logging
import queue
import random
import re
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevolve.eval import baselines as baseline_cache
from kernelevolve.eval.baselines import BaselineCache, BaselineKey
from kernelevolve.eval.worker import WorkerSlot, WorkerStartError
from kernelevolve.types import Baseline, EvalReport, EvalRequest, EvalSettings, KernelSpec, Status

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform

log = logging.getLogger(__name__)

MIN_BASELINE_TIMEOUT_S = 600.0
# Device memory is shared with other evaluations on the GPU (other children, other problems of a
# sweep): running out of it is usually a neighbour's peak, not the candidate's fault. Such a report is
# retried on a fresh child after a pause; one that still runs out is recorded as it came.
OUT_OF_MEMORY_RETRIES = 2
OUT_OF_MEMORY_PAUSE_S = 10.0
OUT_OF_MEMORY_FLAG = "out_of_memory_retried"
_OUT_OF_MEMORY = re.compile(r"OutOfMemoryError|CUDA out of memory|HIP out of memory")
GPU_WORKERS_PER_DEVICE = 2  # one child compiles the next candidate while the other holds the device


def workers_per_device(configured: Any, platform: Platform) -> int:
    """Evaluation children per device: as configured, else 2 on GPUs (runs are serialised by the
    device lock while compiles overlap them) and 1 on the CPU (where timings would interfere)."""
    if configured is not None:
        return int(configured)
    return 1 if platform.device == "cpu" else GPU_WORKERS_PER_DEVICE


class HarnessError(RuntimeError):
    """The evaluation machinery (not the candidate) failed: a broken spec, a child that cannot start."""


@dataclass
class _Job:
    op: str  # "evaluate", "baselines" or "profile"
    payload: Any
    future: Future[Any] = field(default_factory=Future)


class LocalEvaluator:
    """Evaluator protocol over local child processes; thread-safe."""

    def __init__(
        self,
        platform: Platform,
        settings: EvalSettings,
        devices: list[str] | None = None,
        workers_per_device: int = 1,
        baseline_cache: BaselineCache | None = None,
    ) -> None:
        if workers_per_device < 1:
            raise ValueError(f"workers_per_device must be >= 1, got {workers_per_device}")
        self.platform = platform
        self.settings = settings
        self.devices = normalise_devices(platform, devices)
        self._cache = baseline_cache or BaselineCache()
        # CPU baselines timed on a busy host: this run's only, never written to the cache
        self._uncached: dict[BaselineKey, dict[str, Baseline]] = {}
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._closed = False
        self._lock = threading.Lock()
        self._environment: dict[str, str] | None = None
        self._environment_ready = threading.Event()
        self._log_dir = Path(tempfile.mkdtemp(prefix="kernelevolve-workers-"))
        self._slots = [
            WorkerSlot(f"{device}#{k}", device, platform.name, self._log_dir)
            for device in self.devices
            for k in range(workers_per_device)
        ]
        self._threads = [
            threading.Thread(
                target=self._serve, args=(slot,), name=f"kernelevolve-eval-{slot.name}", daemon=True
            )
            for slot in self._slots
        ]
        for thread in self._threads:
            thread.start()
        atexit.register(self.close)

    # ----------------------------------------------------------------------------- protocol
    @property
    def capacity(self) -> int:
        return len(self._slots)

    def submit(self, request: EvalRequest) -> Future[EvalReport]:
        if request.platform != self.platform.name:
            raise ValueError(
                f"request is for platform {request.platform!r}; this evaluator runs {self.platform.name!r}"
            )
        return self._enqueue("evaluate", request)

    def baselines(self, spec: KernelSpec, platform: str) -> dict[str, Baseline]:
        if platform != self.platform.name:
            raise ValueError(
                f"baselines asked for platform {platform!r}; this evaluator runs {self.platform.name!r}"
            )
        if self._environment_ready.wait(timeout=WorkerSlot.STARTUP_TIMEOUT_S) and self._environment:
            cached = self._cache.get(BaselineKey.make(spec, platform, self.settings, self._environment))
            if cached is not None:
                return cached
        result: dict[str, Baseline] = self._enqueue("baselines", spec).result()
        return result

    def profile(self, request: EvalRequest) -> dict[str, Any] | None:
        """How the candidate's GPU time splits between its own kernels and library calls
        (`kernelevolve.eval.time_split`), measured in a child; None on the CPU or if it fails."""
        result: dict[str, Any] | None = self._enqueue("profile", request).result()
        return result

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        atexit.unregister(self.close)
        while True:  # cancel what never started
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.future.cancel()
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=30)
        for slot in self._slots:
            slot.stop()
        shutil.rmtree(self._log_dir, ignore_errors=True)

    def __enter__(self) -> LocalEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------- internals
    def _enqueue(self, op: str, payload: Any) -> Future[Any]:
        job = _Job(op, payload)
        with self._lock:
            if self._closed:
                raise RuntimeError("LocalEvaluator is closed")
            self._queue.put(job)
        return job.future

    def _serve(self, slot: WorkerSlot) -> None:
        try:
            self._note_environment(slot.start())
        except WorkerStartError as exc:
            log.error("worker %s failed to start: %s (retrying on its first job)", slot.name, exc)
        while True:
            job = self._queue.get()
            if job is None:
                return
            if not job.future.set_running_or_notify_cancel():
                continue
            try:
                if job.op == "evaluate":
                    job.future.set_result(self._evaluate(slot, job.payload))
                elif job.op == "profile":
                    job.future.set_result(self._profile(slot, job.payload))
                else:
                    job.future.set_result(self._slot_baselines(slot, job.payload))
            except BaseException as exc:  # delivered to the caller, never lost in this thread
                job.future.set_exception(exc)

    def _note_environment(self, info: dict[str, str]) -> None:
        with self._lock:
            if self._environment is None:
                self._environment = dict(info)
                self._environment_ready.set()

    def _evaluate(self, slot: WorkerSlot, request: EvalRequest) -> EvalReport:
        report = self._run_with_memory_retries(slot, request)
        if not report.ok:
            return report
        baselines = self._slot_baselines(slot, request.spec)
        report = replace(report, baselines=baselines)
        speedup = max_speedup(report, baselines)
        if speedup <= request.settings.max_speedup:
            return report
        log.warning(
            "candidate %s is %.1fx eager (bound %.1fx): re-verifying on a fresh worker",
            request.candidate.id,
            speedup,
            request.settings.max_speedup,
        )
        slot.restart()
        fresh_settings = replace(request.settings, seed=request.settings.seed + 1)
        second = self._run(slot, replace(request, settings=fresh_settings))
        if not second.ok:
            return replace(second, flags=_with_flags(second.flags, "failed_reverification"))
        return replace(
            second, baselines=baselines, flags=_with_flags(second.flags, "excessive_speedup", "reverified")
        )

    def _run_with_memory_retries(self, slot: WorkerSlot, request: EvalRequest) -> EvalReport:
        for attempt in range(OUT_OF_MEMORY_RETRIES + 1):
            last = attempt == OUT_OF_MEMORY_RETRIES
            try:
                report = self._run(slot, request)
            except HarnessError as exc:  # e.g. the reference's inputs did not fit
                if last or not _OUT_OF_MEMORY.search(str(exc)):
                    raise
            else:
                out_of_memory = not report.ok and bool(_OUT_OF_MEMORY.search(report.error_name))
                if not out_of_memory or last:
                    flags = _with_flags(report.flags, OUT_OF_MEMORY_FLAG) if attempt else report.flags
                    return replace(report, flags=flags)
            # Jittered: two evaluations that ran out of memory side by side would otherwise retry side by
            # side at the same pauses and collide again (experiments/adversarial_gpu, session 33).
            pause_s = OUT_OF_MEMORY_PAUSE_S * (attempt + 1) * random.uniform(0.5, 1.5)
            log.warning(
                "%s ran out of device memory (attempt %d): retrying on a fresh child in %.0f s",
                request.candidate.id,
                attempt + 1,
                pause_s,
            )
            slot.restart()
            time.sleep(pause_s)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _run(self, slot: WorkerSlot, request: EvalRequest) -> EvalReport:
        message = {"op": "evaluate", "request": request.to_json(), "platform": request.platform}
        outcome = slot.call(message, request.settings.timeout_s)
        if slot.info is not None:
            self._note_environment(slot.info)
        if outcome.kind == "timeout":
            return EvalReport(
                candidate_id=request.candidate.id,
                status=Status.TIMEOUT,
                error_name="Timeout",
                feedback=f"evaluation exceeded the {request.settings.timeout_s:g} s limit and was killed"
                + (
                    _with_output("stack when stopped", outcome.output)
                    if outcome.output.strip()
                    else "; it did not answer a stack-dump request, so it was blocked in native or GPU "
                    "code (for example a kernel that never finishes)"
                ),
                worker=outcome.worker,
                wall_s=outcome.wall_s,
            )
        if outcome.kind == "crash":
            return EvalReport(
                candidate_id=request.candidate.id,
                status=Status.WORKER_CRASH,
                error_name=outcome.exit_description,
                feedback=f"the evaluation process died ({outcome.exit_description})"
                + _with_output("last output", outcome.output),
                worker=outcome.worker,
                wall_s=outcome.wall_s,
            )
        reply = outcome.reply
        if reply.get("op") == "error":
            raise HarnessError(
                f"evaluation of {request.candidate.id} failed ({reply.get('kind')}): {reply.get('error')}"
            )
        report = EvalReport.from_json(reply["report"])
        if reply.get("recycle"):
            log.info("replacing worker %s after %s: %s", slot.name, report.status.value, report.error_name)
            slot.restart()
        return report

    def _profile(self, slot: WorkerSlot, request: EvalRequest) -> dict[str, Any] | None:
        message = {"op": "profile", "request": request.to_json(), "platform": request.platform}
        outcome = slot.call(message, request.settings.timeout_s)
        if outcome.kind == "reply" and outcome.reply.get("op") == "profile":
            split: dict[str, Any] | None = outcome.reply.get("split")
            return split
        # A measurement, not a verdict: a failure is logged and the winner stands without it.
        detail = outcome.reply.get("error") if outcome.kind == "reply" else outcome.exit_description
        log.warning(
            "profiling %s failed (%s): %s", request.candidate.id, outcome.kind, detail or outcome.output
        )
        return None

    def _slot_baselines(self, slot: WorkerSlot, spec: KernelSpec) -> dict[str, Baseline]:
        if slot.info is None:
            self._note_environment(slot.start())
        assert slot.info is not None
        key = BaselineKey.make(spec, self.platform.name, self.settings, slot.info)
        cached = self._uncached.get(key) or self._cache.get(key)
        if cached is not None:
            return cached
        message = {
            "op": "baselines",
            "spec": spec.to_json(),
            "settings": self.settings.to_json(),
            "platform": self.platform.name,
        }
        outcome = slot.call(message, max(MIN_BASELINE_TIMEOUT_S, 4 * self.settings.timeout_s))
        if outcome.kind != "reply" or outcome.reply.get("op") != "baselines":
            detail = (
                outcome.reply.get("error")
                if outcome.kind == "reply"
                else outcome.exit_description or outcome.kind
            )
            raise HarnessError(
                f"measuring baselines of spec {spec.name!r} failed: {detail}\n{outcome.output}"
            )
        baselines = {name: Baseline.from_json(b) for name, b in outcome.reply["baselines"].items()}
        busy = baseline_cache.busy_host() if self.platform.device == "cpu" else ""
        if busy:  # wall-clock timings shared with other work: good for this run at best, not for later ones
            log.warning("baselines of %s timed on a busy host (%s): not cached", spec.name, busy)
            self._uncached[key] = baselines
        else:
            self._cache.put(key, baselines)
        return baselines


def normalise_devices(platform: Platform, devices: list[str] | None) -> list[str]:
    """Devices as "cpu" or "cuda:N"; default: every visible GPU, or the CPU."""
    if platform.device == "cpu":
        if devices and any(d != "cpu" for d in devices):
            raise ValueError(
                f"platform {platform.name!r} runs on the CPU; devices must be ['cpu'], got {devices}"
            )
        return list(devices or ["cpu"])
    if devices is None:
        import torch

        count = torch.cuda.device_count()
        if count == 0:
            raise ValueError(
                f"platform {platform.name!r} needs {platform.device} devices but none are visible"
            )
        return [f"{platform.device}:{i}" for i in range(count)]
    out = []
    for device in devices:
        text = str(device)
        if re.fullmatch(r"\d+", text):
            text = f"{platform.device}:{text}"
        if not re.fullmatch(rf"{platform.device}:\d+", text):
            raise ValueError(
                f"device {device!r} is not valid for platform {platform.name!r}; use '{platform.device}:N' or N"
            )
        out.append(text)
    return out


def max_speedup(report: EvalReport, baselines: dict[str, Baseline]) -> float:
    """Largest eager/candidate median ratio over the shapes both have (0 when none)."""
    ratios = [
        baselines[name].eager.median_ms / stats.median_ms
        for name, stats in report.latency.items()
        if name in baselines and stats.median_ms > 0
    ]
    return max(ratios, default=0.0)


def _with_flags(flags: tuple[str, ...], *extra: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*flags, *extra)))


def _with_output(title: str, output: str) -> str:
    return f"\n{title}:\n{output}" if output.strip() else ""
