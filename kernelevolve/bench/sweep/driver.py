"""A sweep over KernelBench problems: which to run, in how many slots, each problem's record kept and the
summary rewritten as results come in; resumable, within a time limit (`cli.py` is its command line).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import os
import queue
import re
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kernelevolve.bench.kernelbench.judge import JudgeSettings, kernelbench_src
from kernelevolve.bench.kernelbench.judge.winners import judged_problem
from kernelevolve.bench.kernelbench.problems import Problem, list_problems
from kernelevolve.bench.sweep.quiet import EvaluatorFactory, local_evaluator_factory, remeasure
from kernelevolve.bench.sweep.run import (
    TIME_FORMAT,
    SweepError,
    SweepOptions,
    compose_base_config,
    device_slots,
    gpu_share,
    problem_config,
    problem_key,
    problem_slug,
    record_slug,
    record_spec,
    run_problem,
    run_problem_isolated,
)
from kernelevolve.bench.sweep.sample import read_sample
from kernelevolve.bench.sweep.suite import suite_problems
from kernelevolve.bench.sweep.summary import MANIFEST, RESULTS_DIR, load_records
from kernelevolve.bench.sweep.summary_markdown import write_summary
from kernelevolve.paths import PROJECT_ROOT
from kernelevolve.results.progress import Progress

log = logging.getLogger("kernelevolve.bench.sweep")

DEFAULT_KERNELBENCH = PROJECT_ROOT.parent / "shared" / "benchmarks" / "kernelbench" / "problems.jsonl"


RESULTS_JSONL = "results.jsonl"


RUNS_DIR = "runs"


# past the time limit, how long the quiet re-measurement of host-bound baselines may still start new ones
QUIET_BASELINES_ALLOWANCE_S = 60.0


# Settings that change what a result means: a resumed sweep must keep them.
_FIXED_SETTINGS = ("platform", "budget_evals", "budget_seconds", "sets", "permissive")


_SETTING_DEFAULTS = {"permissive": False}  # manifests written before the setting existed


@dataclass(frozen=True)
class SweepOutcome:
    selected: list[str]
    ran: list[str]
    skipped: list[str]
    remaining: list[str]
    stopped_by_time: bool
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.remaining


def parse_ids(text: str) -> set[int]:
    """'1-10,19' -> {1..10, 19}."""
    ids: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match:
            raise SweepError(f"--ids: {part!r} is not N or N-M (example: 1-10,19)")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if high < low:
            raise SweepError(f"--ids: range {part!r} runs backwards")
        ids.update(range(low, high + 1))
    return ids


def select_problems(options: SweepOptions) -> list[Problem]:
    if options.specs:
        if options.sample is not None:
            raise SweepError("--sample lists KernelBench problems; with --specs, name the specs instead")
        problems = suite_problems(options.specs)
    else:
        problems = list_problems(options.kernelbench_path, tuple(options.levels))
    if options.sample is not None:
        wanted = read_sample(options.sample)
        missing = set(wanted) - {(p.level, p.problem_id) for p in list_problems(options.kernelbench_path)}
        if missing:
            raise SweepError(f"{options.sample}: not in {options.kernelbench_path}: {sorted(missing)}")
        # the sample's order is the run order, so a list can put what matters most first
        by_key = {(p.level, p.problem_id): p for p in problems}
        problems = [by_key[key] for key in wanted if key in by_key]
    if options.ids:
        ids = parse_ids(options.ids)
        problems = [p for p in problems if p.problem_id in ids]
    if not problems:
        raise SweepError("the selection is empty: check --levels, --ids and --sample")
    return problems


class Sweep:
    """One call of a sweep over a folder: select, skip what is done, run the rest within the time limit."""

    def __init__(self, options: SweepOptions) -> None:
        self.options = options
        self.out = options.out
        self.results_dir = self.out / RESULTS_DIR
        self.runs_dir = self.out / RUNS_DIR

    def result_path(self, problem: Problem) -> Path:
        return self.results_dir / f"{problem_slug(problem)}.json"

    def run(self) -> SweepOutcome:
        start = time.monotonic()
        if self.options.kernelbench_judge is not None:
            kernelbench_src(self.options.kernelbench_judge)  # a wrong path fails now, not after the searches
            if self.options.platform == "cpu":
                log.warning(
                    "KernelBench's evaluator needs CUDA: on platform cpu its verdicts say it could not judge"
                )
        problems = select_problems(self.options)
        base = compose_base_config(self.options)
        self.results_dir.mkdir(parents=True, exist_ok=True)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self._write_manifest(problems)
        todo = deque(p for p in problems if self._needs_run(p))
        skipped = [problem_key(p) for p in problems if p not in todo]
        if self.options.max_problems is not None:
            todo = deque(list(todo)[: self.options.max_problems])
        slots = device_slots(base, self.options)
        share = gpu_share(base, self.options, slots)
        log.info(
            "sweep %s: %d selected, %d already done, %d to run now, %d at a time",
            self.out,
            len(problems),
            len(skipped),
            len(todo),
            len(slots),
        )
        observed = self._observed_wall_s()
        runner: Callable[[dict[str, Any], Problem], dict[str, Any]] = (
            run_problem_isolated if self.options.isolate else run_problem
        )
        if self.options.kernelbench_judge is not None:
            judge = JudgeSettings(
                str(self.options.kernelbench_judge), self.options.kernelbench_judge_timeout_s
            )
            runner = functools.partial(judged_problem, runner, judge)
        shared = self.options.isolate and self.options.evaluator == "ray"
        address = (base.get("evaluator") or {}).get("address")
        with (
            shared_ray_cluster(address) if shared else contextlib.nullcontext(),
            Progress(prefix="sweep: ") as progress,
        ):
            progress.phase("problems", total=len(todo), unit="problems", budget_s=self.options.time_limit_s)
            done = functools.partial(_shown, progress)
            ran, stopped = self._run_problems(todo, base, slots, share, observed, runner, start, done)
        if self.options.quiet_baselines:
            self._quiet_baselines(start, base, first=ran)
        summary = write_summary(self.out)
        remaining = [key for p in problems if (key := problem_key(p)) not in ran and self._needs_run(p)]
        self._log_call(start, ran, stopped, len(slots))
        return SweepOutcome([problem_key(p) for p in problems], ran, skipped, remaining, stopped, summary)

    def _run_problems(
        self,
        todo: deque[Problem],
        base: dict[str, Any],
        slots: list[str | None],
        share: float | None,
        observed: dict[int, list[float]],
        runner: Callable[[dict[str, Any], Problem], dict[str, Any]],
        start: float,
        done_one: Callable[[dict[str, Any]], None] = lambda record: None,
    ) -> tuple[list[str], bool]:
        """Runs problems from `todo`, len(slots) at a time, until done or the time limit; (ran, stopped)."""
        free: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        for slot in slots:
            free.put(slot)
        ran: list[str] = []
        stopped = False
        running: dict[Future[dict[str, Any]], tuple[Problem, str | None]] = {}
        with ThreadPoolExecutor(max_workers=len(slots), thread_name_prefix="sweep") as pool:
            while todo or running:
                while todo and not stopped and len(running) < len(slots):
                    elapsed = time.monotonic() - start
                    limit = self.options.time_limit_s
                    level_estimate = self._estimate_s(todo[0].level, observed)
                    previous = self._previous_wall_s(todo[0])
                    estimate = max(level_estimate, previous)
                    if limit is not None and elapsed + estimate > limit:
                        log.info(
                            "time limit: %.0f s elapsed + %.0f s estimate (%s) > %.0f s; no new problem starts",
                            elapsed,
                            estimate,
                            f"{problem_key(todo[0])}'s last run"
                            if previous > level_estimate
                            else f"level {todo[0].level}",
                            limit,
                        )
                        stopped = True
                        break
                    problem, device = todo.popleft(), free.get()
                    cfg = problem_config(base, problem, self.runs_dir, device)
                    log.info(
                        "%s %s: starting%s",
                        problem_key(problem),
                        problem.name,
                        f" on {device}" if device else "",
                    )
                    running[pool.submit(runner, cfg, problem)] = (problem, device)
                if not running:
                    break
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in done:
                    problem, device = running.pop(future)
                    free.put(device)
                    record = {**future.result(), "gpu_share": share}  # for evaluations per GPU-minute
                    self._store(record)
                    _note_wall_s(observed, record)
                    ran.append(problem_key(problem))
                    done_one(record)
        return ran, stopped

    def _quiet_baselines(
        self,
        start: float,
        base: dict[str, Any],
        make_evaluator: EvaluatorFactory | None = None,
        first: Iterable[str] = (),
    ) -> list[str]:
        """Host-bound baselines of this folder's records measured again, now that nothing else runs; the
        problems in `first` (this call's) before the rest, which a time limit would otherwise leave out."""
        limit = self.options.time_limit_s
        deadline = None if limit is None else start + limit + QUIET_BASELINES_ALLOWANCE_S

        def config_for(record: dict[str, Any]) -> dict[str, Any]:
            return {**base, "spec": record_spec(record)}

        this_call = set(first)
        # a stable sort: this call's records first, each group in the folder's order
        records = sorted(load_records(self.out), key=lambda r: r.get("problem") not in this_call)
        evaluators = make_evaluator or local_evaluator_factory()
        return remeasure(records, config_for, evaluators, self._store, deadline)

    def _observed_wall_s(self) -> dict[int, list[float]]:
        """Wall seconds of the finished problems in this sweep's results, per level."""
        observed: dict[int, list[float]] = {}
        for record in load_records(self.out):
            _note_wall_s(observed, record)
        return observed

    def _estimate_s(self, level: int, observed: dict[int, list[float]]) -> float:
        """One problem's expected wall time: the budget's estimate, or the level's median so far if longer."""
        times = observed.get(level)
        return max(self.options.estimate_s, statistics.median(times)) if times else self.options.estimate_s

    def _previous_wall_s(self, problem: Problem) -> float:
        """The wall seconds of the problem's own earlier run, where a re-run replaces one (0 otherwise): a
        level's estimate can be far shorter than a slow problem took (experiments/full_sweep_h200)."""
        try:
            wall_s = json.loads(self.result_path(problem).read_text()).get("wall_s")
        except (OSError, json.JSONDecodeError, AttributeError):
            return 0.0
        return float(wall_s) if isinstance(wall_s, (int, float)) else 0.0

    def _needs_run(self, problem: Problem) -> bool:
        path = self.result_path(problem)
        if not path.is_file():
            return True
        if not (self.options.retry_failed or self.options.rerun_before):
            return False
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            return True
        if self.options.retry_failed and record.get("status") == "run_failed":
            return True
        return self.options.rerun_before is not None and finished_before(record, self.options.rerun_before)

    def _store(self, record: dict[str, Any]) -> None:
        path = self.results_dir / f"{record_slug(int(record['level']), int(record['problem_id']))}.json"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(record, indent=2, default=str))
        tmp.replace(path)
        with (self.out / RESULTS_JSONL).open("a") as handle:
            handle.write(json.dumps(record, default=str) + "\n")
        speedup = record.get("speedup_vs_eager")
        log.info(
            "%s %s: %s%s, %s evaluations, %.0f s",
            record["problem"],
            record["name"],
            record["status"],
            f" {speedup:.2f}x eager" if speedup else "",
            record.get("evaluations", 0),
            record["wall_s"],
        )
        write_summary(self.out)

    def _settings(self) -> dict[str, Any]:
        options = asdict(self.options)
        settings = {key: options[key] for key in (*_FIXED_SETTINGS, "evaluator", "time_limit_s")}
        settings["sets"] = list(self.options.sets)
        settings["kernelbench_path"] = str(self.options.kernelbench_path)
        judge = self.options.kernelbench_judge
        settings["kernelbench_judge"] = str(judge) if judge is not None else None
        return settings

    def _write_manifest(self, problems: list[Problem]) -> None:
        path = self.out / MANIFEST
        manifest: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
        settings = self._settings()
        old = manifest.get("settings")
        if old:
            changed = [
                key for key in _FIXED_SETTINGS if old.get(key, _SETTING_DEFAULTS.get(key)) != settings[key]
            ]
            if changed:
                raise SweepError(
                    f"{self.out} was swept with different {', '.join(changed)} "
                    f"({ {k: old.get(k) for k in changed} }); use another --out to compare settings"
                )
        selected = list(dict.fromkeys([*manifest.get("selected", []), *(problem_key(p) for p in problems)]))
        manifest.update(settings=settings, selected=selected)
        path.write_text(json.dumps(manifest, indent=2))

    def _log_call(self, start: float, ran: list[str], stopped: bool, slots: int) -> None:
        path = self.out / MANIFEST
        manifest = json.loads(path.read_text())
        manifest.setdefault("calls", []).append(
            {
                "finished_at": time.strftime(TIME_FORMAT),
                "wall_s": time.monotonic() - start,
                "ran": ran,
                "stopped_by_time_limit": stopped,
                # what the call ran on, for throughput and scaling (`kernelevolve.bench.sweep.scaling`)
                "gpus": _visible_gpu_count(),
                "problems_at_once": slots,
                "fresh_caches": self.options.fresh_caches,
                "isolated": self.options.isolate,
            }
        )
        path.write_text(json.dumps(manifest, indent=2))


def _shown(progress: Progress, record: dict[str, Any]) -> None:
    speedup = record.get("speedup_vs_eager")
    note = f"last {record['problem']} {record['status']}" + (f" {speedup:.2f}x eager" if speedup else "")
    progress.advance(note=note)


def _note_wall_s(observed: dict[int, list[float]], record: dict[str, Any]) -> None:
    """Add a record's wall time, where it has one, to its level's list."""
    if isinstance(record.get("wall_s"), (int, float)):
        observed.setdefault(int(record["level"]), []).append(float(record["wall_s"]))


@contextlib.contextmanager
def shared_ray_cluster(address: str | None) -> Iterator[None]:
    """Join (or start) the Ray cluster here and name it in RAY_ADDRESS while the block runs: the problems'
    own processes inherit it and `ray.init` reads it, so every problem's actors come from one cluster."""
    import ray

    from kernelevolve.eval.ray_actor import connect

    connect(address)
    before = os.environ.get("RAY_ADDRESS")
    os.environ["RAY_ADDRESS"] = ray.get_runtime_context().gcs_address
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("RAY_ADDRESS", None)
        else:
            os.environ["RAY_ADDRESS"] = before


def finished_before(record: dict[str, Any], when: datetime) -> bool:
    """Whether a problem's record finished before `when`; a record without a readable time counts as
    older (run again rather than keep a result of unknown age)."""
    try:
        finished = datetime.strptime(str(record["finished_at"]), TIME_FORMAT)
    except (KeyError, ValueError):
        return True
    return finished < when


def _aware_time(text: str) -> datetime:
    """An ISO 8601 time with its UTC offset (argparse type): records carry theirs."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time, e.g. 2026-12-01T06:00:00+00:00"
        ) from None
    if when.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no UTC offset: add one, e.g. {text}+00:00")
    return when


def _visible_gpu_count() -> int:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a core dependency
        return 0
    return int(torch.cuda.device_count())
