"""RayEvaluator: the Evaluator protocol over Ray actors, one per accelerator.

Each actor asks Ray for one GPU (plus an accelerator type and custom resources, so NVIDIA, AMD and
other nodes of one cluster serve their own platforms) and wraps a `LocalEvaluator` pinned to the
device Ray assigned it: candidate code still runs in a child process inside the actor, with the
same timeouts and respawns as on one machine. The driver keeps at most `max_in_flight_per_actor`
requests on each actor and hands reports back in completion order as `concurrent.futures.Future`s.

An actor that dies takes its in-flight requests with it: they come back as WORKER_CRASH reports
and are never retried (`max_task_retries=0`; a candidate that kills its host must not get a second
go). Ray restarts the actor up to `max_restarts` times; a probe call tells a restarted actor from a
dead one, and a dead one is replaced by a fresh actor, so the search goes on.

`profile` (a winner's GPU time split) travels the same way, as a job beside the evaluations; a
profile lost with its actor comes back as None, like any profile that fails. The actor and the cluster
queries are `ray_actor.py`.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import uuid
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import ActorUnavailableError, RayActorError

from kernelevolve.eval.ray_actor import _actor_class, cluster_accelerators, connect
from kernelevolve.types import Baseline, EvalReport, EvalRequest, EvalSettings, KernelSpec, Status

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform

log = logging.getLogger(__name__)

ACTOR_NAME_PREFIX = "kernelevolve-eval"
MAIN_POOL = "main"
COMPILE_POOL = "compile"  # CPU actors for candidates whose backend is compile-only on the platform
WAIT_LOG_S = 60.0  # how often a call waiting for an actor (no free GPU yet) says so


@dataclass
class _Job:
    request: EvalRequest
    op: str = "evaluate"  # the EvalActor method: "evaluate" (an EvalReport) or "profile" (a dict or None)
    future: Future[Any] = field(default_factory=Future)


@dataclass
class _Slot:
    pool: str
    index: int
    handle: Any = None
    name: str = ""
    epoch: int = 0  # bumped at each death seen, so one death is handled once
    in_flight: int = 0
    probing: bool = False  # after a death: no work until a probe says the actor is back
    replacements: int = 0
    retired: bool = False

    @property
    def usable(self) -> bool:
        return not self.retired and not self.probing


class RayEvaluator:
    """Evaluator protocol over Ray actors; thread-safe. One dispatcher thread makes every Ray call."""

    def __init__(
        self,
        platform: Platform,
        settings: EvalSettings,
        address: str | None = None,
        num_actors: int | None = None,
        accelerator_type: str | None = None,
        resources: dict[str, float] | None = None,
        max_in_flight_per_actor: int | None = None,
        max_restarts: int = 3,
        cpu_compile_workers: int = 0,
        num_gpus_per_actor: float | None = None,
        num_cpus_per_actor: float = 1.0,
        workers_per_actor: int | None = None,
        max_replacements: int = 3,
    ) -> None:
        from kernelevolve.eval.local import workers_per_device

        workers_per_actor = workers_per_device(workers_per_actor, platform)
        if max_in_flight_per_actor is None:
            max_in_flight_per_actor = workers_per_actor  # keep every child of an actor busy
        if max_in_flight_per_actor < 1:
            raise ValueError(f"max_in_flight_per_actor must be >= 1, got {max_in_flight_per_actor}")
        if max_restarts < 0 or max_replacements < 0 or cpu_compile_workers < 0:
            raise ValueError("max_restarts, max_replacements and cpu_compile_workers must be >= 0")
        self.platform = platform
        self.settings = settings
        self.max_in_flight = max_in_flight_per_actor
        self.max_replacements = max_replacements
        self.accelerator_type = accelerator_type or None
        self.resources = {str(k): float(v) for k, v in (resources or {}).items()}
        self.num_gpus = (
            float(num_gpus_per_actor)
            if num_gpus_per_actor is not None
            else (0.0 if platform.device == "cpu" else 1.0)
        )
        self.num_cpus = float(num_cpus_per_actor)
        self.max_restarts = max_restarts
        self.workers_per_actor = workers_per_actor
        connect(address)
        count = num_actors if num_actors is not None else self._default_actor_count()
        if count < 1:
            raise ValueError(
                f"RayEvaluator needs at least one actor; the cluster offers none for platform "
                f"{platform.name!r} (GPUs: {ray.cluster_resources().get('GPU', 0)}, accelerator_type="
                f"{self.accelerator_type}, resources={self.resources}); set evaluator.num_actors"
            )
        self._tag = uuid.uuid4().hex[:8]
        self._slots = [_Slot(MAIN_POOL, i) for i in range(count)]
        self._slots += [_Slot(COMPILE_POOL, i) for i in range(cpu_compile_workers)]
        for slot in self._slots:
            self._start_actor(slot)
        self._pending: dict[str, deque[_Job]] = {MAIN_POOL: deque(), COMPILE_POOL: deque()}
        self._running: dict[int, tuple[_Slot, _Job]] = {}
        self._events: queue.Queue[tuple[Any, ...] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        self._dispatcher = threading.Thread(target=self._loop, name="kernelevolve-ray-dispatch", daemon=True)
        self._dispatcher.start()
        atexit.register(self.close)

    # ----------------------------------------------------------------------------- protocol
    @property
    def capacity(self) -> int:
        return sum(self.max_in_flight for slot in self._slots if not slot.retired)

    def submit(self, request: EvalRequest) -> Future[EvalReport]:
        return self._enqueue(_Job(request))

    def profile(self, request: EvalRequest) -> dict[str, Any] | None:
        """How the candidate's GPU time splits between its own kernels and library calls
        (`LocalEvaluator.profile` in a main-pool actor, dispatched like an evaluation); None on the
        CPU, if it fails, or if its actor dies."""
        split: dict[str, Any] | None = self._enqueue(_Job(request, op="profile")).result()
        return split

    def baselines(self, spec: KernelSpec, platform: str) -> dict[str, Baseline]:
        """Measured by a main-pool actor; an actor death is retried (baselines are no candidate)."""
        if platform != self.platform.name:
            raise ValueError(
                f"baselines asked for platform {platform!r}; this evaluator runs {self.platform.name!r}"
            )
        attempts = (self.max_restarts + 1) * (self.max_replacements + 1)
        last: Exception | None = None
        for attempt in range(attempts):
            slots = [s for s in self._slots if s.pool == MAIN_POOL and not s.retired]
            if not slots:
                break
            slot = slots[attempt % len(slots)]
            try:
                ref = slot.handle.baselines.remote(spec.to_json(), platform)
                while not ray.wait([ref], timeout=WAIT_LOG_S)[0]:  # e.g. no free GPU for the actor yet
                    log.info(
                        "still waiting for Ray actor %s to measure baselines of %s", slot.name, spec.name
                    )
                data = ray.get(ref)
                return {name: Baseline.from_json(value) for name, value in data.items()}
            except RayActorError as exc:
                log.warning("actor %s died measuring baselines (%s); trying again", slot.name, exc)
                last = exc
                self._events.put(("died", slot, slot.epoch))
                time.sleep(1.0)  # give Ray (or the dispatcher) time to bring an actor back
        raise RuntimeError(f"no Ray actor could measure baselines of {spec.name!r}: {last}")

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        atexit.unregister(self.close)
        self._events.put(None)
        self._dispatcher.join(timeout=30)
        for jobs in self._pending.values():
            for job in jobs:
                job.future.cancel()
        for _, job in list(self._running.values()):
            if not job.future.done():  # started, so not cancellable: answer it rather than leave it hanging
                _give_up(job, _not_evaluated(job.request, "the evaluator was closed first"))
        handles = [slot.handle for slot in self._slots if slot.handle is not None]
        if ray.is_initialized():
            try:  # let each LocalEvaluator stop its children, then make sure the actors are gone
                ray.get([h.close.remote() for h in handles], timeout=10)
            except Exception as exc:
                log.info("closing Ray evaluation actors: %s", exc)
            for handle in handles:
                _kill(handle)

    def __enter__(self) -> RayEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------ for operators
    def actors(self) -> list[Any]:
        """Handles of the live actors (main pool first); for inspection, tests and operations."""
        return [slot.handle for slot in self._slots if not slot.retired]

    def actor_info(self) -> list[dict[str, Any]]:
        return list(ray.get([handle.info.remote() for handle in self.actors()]))

    # ----------------------------------------------------------------------------- internals
    def _enqueue(self, job: _Job) -> Future[Any]:
        if job.request.platform != self.platform.name:
            raise ValueError(
                f"request is for platform {job.request.platform!r}; this evaluator runs {self.platform.name!r}"
            )
        with self._lock:
            if self._closed:
                raise RuntimeError("RayEvaluator is closed")
            self._events.put(("submit", job))
        return job.future

    def _default_actor_count(self) -> int:
        if self.platform.device == "cpu" and self.num_gpus == 0:
            return 1  # CPU timings interfere with each other; more actors on request only
        return cluster_accelerators(self.num_gpus, self.accelerator_type, self.resources)

    def _start_actor(self, slot: _Slot) -> None:
        compile_only = slot.pool == COMPILE_POOL
        options: dict[str, Any] = {
            "num_cpus": 1.0 if compile_only else self.num_cpus,
            "num_gpus": 0.0 if compile_only else self.num_gpus,
            "max_restarts": self.max_restarts,
            "max_task_retries": 0,
            "max_concurrency": self.max_in_flight + 2,  # room for info/baselines beside evaluations
            "name": f"{ACTOR_NAME_PREFIX}-{self._tag}-{slot.pool}{slot.index}-{slot.replacements}",
        }
        if not compile_only:
            if self.resources:
                options["resources"] = dict(self.resources)
            if self.accelerator_type:
                options["accelerator_type"] = self.accelerator_type
        slot.name = options["name"]
        slot.handle = (
            _actor_class()
            .options(**options)
            .remote(
                slot.name, self.platform.name, self.settings.to_json(), self.workers_per_actor, compile_only
            )
        )

    def _loop(self) -> None:
        while True:
            event = self._events.get()
            if event is None:
                return
            try:
                self._handle(event)
                self._dispatch()
            except Exception:  # the dispatcher must survive anything a single event does
                log.exception("Ray evaluator dispatcher: error handling %s", event[0])

    def _handle(self, event: tuple[Any, ...]) -> None:
        kind = event[0]
        if kind == "submit":
            job: _Job = event[1]
            # A profile needs the device, which only the main pool has.
            to_compile = job.op == "evaluate" and self._routes_to_compile_pool(job.request)
            pool = COMPILE_POOL if to_compile else MAIN_POOL
            self._pending[pool].append(job)
        elif kind == "done":
            self._finished(*event[1:])
        elif kind == "died":
            self._died(event[1], event[2])
        elif kind == "probed":
            self._probed(*event[1:])
        elif kind == "reprobe" and event[2] == event[1].epoch:
            self._probe(event[1])

    def _routes_to_compile_pool(self, request: EvalRequest) -> bool:
        has_pool = any(s.pool == COMPILE_POOL and not s.retired for s in self._slots)
        return has_pool and self.platform.support(request.candidate.backend) == "compile_only"

    def _dispatch(self) -> None:
        for pool, jobs in self._pending.items():
            slots = [s for s in self._slots if s.pool == pool and not s.retired]
            if not slots and jobs:
                self._fail_all(jobs, f"no Ray actor is left in the {pool} pool")
                continue
            while jobs:
                free = [s for s in slots if s.usable and s.in_flight < self.max_in_flight]
                if not free:
                    break
                slot = min(free, key=lambda s: s.in_flight)
                job = jobs.popleft()
                if not job.future.set_running_or_notify_cancel():
                    continue
                slot.in_flight += 1
                ref = getattr(slot.handle, job.op).remote(job.request.to_json())
                key = id(job)
                self._running[key] = (slot, job)
                epoch = slot.epoch
                ref.future().add_done_callback(lambda f, k=key, e=epoch: self._events.put(("done", k, e, f)))

    def _finished(self, key: int, epoch: int, outcome: Future[Any]) -> None:
        slot, job = self._running.pop(key)
        slot.in_flight -= 1
        try:
            result = outcome.result()
            job.future.set_result(EvalReport.from_json(result) if job.op == "evaluate" else result)
        except RayActorError as exc:
            _give_up(job, _actor_crash_report(job.request, slot.name, exc))
            self._died(slot, epoch)
        except Exception as exc:  # the harness itself failed (HarnessError inside the actor)
            job.future.set_exception(exc)

    def _died(self, slot: _Slot, epoch: int) -> None:
        if epoch != slot.epoch or slot.retired:
            return  # this death was seen already
        slot.epoch += 1
        slot.probing = True
        log.warning("Ray evaluation actor %s died; probing whether Ray restarted it", slot.name)
        self._probe(slot)

    def _probe(self, slot: _Slot) -> None:
        epoch = slot.epoch
        ref = slot.handle.info.remote()
        ref.future().add_done_callback(lambda f, s=slot, e=epoch: self._events.put(("probed", s, e, f)))

    def _probed(self, slot: _Slot, epoch: int, outcome: Future[Any]) -> None:
        if epoch != slot.epoch or slot.retired:
            return
        try:
            outcome.result()
        except ActorUnavailableError:  # restarting or briefly unreachable: ask again shortly
            timer = threading.Timer(1.0, lambda: self._events.put(("reprobe", slot, epoch)))
            timer.daemon = True
            timer.start()
            return
        except Exception as exc:
            self._replace(slot, exc)
            return
        log.info("Ray evaluation actor %s is back", slot.name)
        slot.probing = False

    def _replace(self, slot: _Slot, exc: BaseException) -> None:
        """Ray gave up restarting the actor: start a fresh one, or retire the slot after too many."""
        _kill(slot.handle)
        if slot.replacements >= self.max_replacements:
            log.error("Ray evaluation actor %s is dead and was replaced too often; retiring it", slot.name)
            slot.retired = True
            return
        slot.replacements += 1
        log.warning("Ray evaluation actor %s is dead (%s); starting a replacement", slot.name, exc)
        self._start_actor(slot)
        slot.epoch += 1
        self._probe(slot)

    def _fail_all(self, jobs: deque[_Job], reason: str) -> None:
        while jobs:
            job = jobs.popleft()
            if job.future.set_running_or_notify_cancel():
                _give_up(job, _not_evaluated(job.request, reason))


def _actor_crash_report(request: EvalRequest, actor: str, exc: BaseException) -> EvalReport:
    text = str(exc).strip().splitlines()
    return EvalReport(
        candidate_id=request.candidate.id,
        status=Status.WORKER_CRASH,
        error_name=type(exc).__name__,
        feedback=f"the Ray actor evaluating this candidate ({actor}) died; it is not retried"
        + (f": {text[0]}" if text else ""),
        worker=actor,
    )


def _give_up(job: _Job, report: EvalReport) -> None:
    """Answer a job that could not run: an evaluation with `report`; a profile, a measurement and
    not a verdict, with None (the winner stands without its time split)."""
    if job.op == "profile":
        log.warning("time split of %s not measured: %s", job.request.candidate.id, report.feedback)
        job.future.set_result(None)
    else:
        job.future.set_result(report)


def _not_evaluated(request: EvalRequest, reason: str) -> EvalReport:
    return EvalReport(
        candidate_id=request.candidate.id,
        status=Status.WORKER_CRASH,
        error_name="NotEvaluated",
        feedback=f"not evaluated: {reason}",
    )


def _kill(handle: Any) -> None:
    try:
        ray.kill(handle, no_restart=True)
    except Exception as exc:  # already gone
        log.debug("ray.kill: %s", exc)
