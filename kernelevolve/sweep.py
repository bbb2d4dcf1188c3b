"""KernelBench sweeps: one search per problem, resumable, in chunks that fit a device lease.

    python -m kernelevolve.sweep --kernelbench-path PATH --levels 1 2 --ids 1-10,19 \\
        --platform h200 --budget-evals 20 --budget-seconds 120 --out experiments/sweeps/NAME \\
        --time-limit-s 500 [--sample FILE] [--evaluator local|ray] [--parallel N] [--permissive] \\
        [--kernelbench-judge PATH] [--set key=value ...]

Arguments are argparse (not Hydra): each problem's config is composed from conf/ with Hydra's
compose API, exactly as `python -m kernelevolve` would, with `--set` items as extra overrides
(any Hydra override: `search=islands`, `platform.eval.timing_trials=50`). Every finished problem
writes results/L<level>_<id>.json and a line in results.jsonl; a problem with a result is skipped
on the next call, and a run that was cut off resumes from its graph checkpoint. With a time limit
no problem starts unless the elapsed time plus one problem's estimate fits: budget + allowance, or the
median wall time of the level's finished problems where that is longer (level 3's seeding and
baselines take minutes), or, for a re-run, the problem's own last wall time where that is longer still.
`--retry-failed` runs failed runs again; `--rerun-before TIME` runs again results older than TIME
(after a fix), each once, while results.jsonl keeps the older records. `--isolate` runs each problem's
search in a process of its own (`sweep_run.run_problem_isolated`). `--kernelbench-judge PATH` also runs
each problem's winners through KernelBench's own evaluator (`kernelevolve.kernelbench_judge`).

By default problems are searched in strict mode (every FLOP in our own kernels) and the summary
reports strict results only. `--permissive` (or `--set strict=false`) searches in permissive mode,
where kernels may keep PyTorch's library calls (cuBLAS, cuDNN), and the summary reports both: the
best kernel with own kernels only ("strict") and the best kernel overall ("permissive").
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
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kernelevolve.kernelbench import Problem, list_problems
from kernelevolve.kernelbench_judge import JudgeSettings, kernelbench_src
from kernelevolve.kernelbench_judge.winners import judged_problem
from kernelevolve.paths import PROJECT_ROOT
from kernelevolve.sweep_quiet import EvaluatorFactory, local_evaluator_factory, remeasure
from kernelevolve.sweep_run import (
    LOG_FORMAT,
    TIME_FORMAT,
    SweepError,
    SweepOptions,
    compose_base_config,
    device_slots,
    gpu_share,
    problem_config,
    problem_key,
    problem_slug,
    record_key,
    record_slug,
    run_problem,
    run_problem_isolated,
)
from kernelevolve.sweep_sample import read_sample
from kernelevolve.sweep_summary import MANIFEST, RESULTS_DIR, load_records, write_summary

log = logging.getLogger("kernelevolve.sweep")

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
        with shared_ray_cluster(address) if shared else contextlib.nullcontext():
            ran, stopped = self._run_problems(todo, base, slots, share, observed, runner, start)
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
            return {**base, "spec": f"kernelbench:{record['level']}/{record['problem_id']}"}

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
                # what the call ran on, for throughput and scaling (`kernelevolve.sweep_scaling`)
                "gpus": _visible_gpu_count(),
                "problems_at_once": slots,
                "fresh_caches": self.options.fresh_caches,
                "isolated": self.options.isolate,
            }
        )
        path.write_text(json.dumps(manifest, indent=2))


def _note_wall_s(observed: dict[int, list[float]], record: dict[str, Any]) -> None:
    """Add a record's wall time, where it has one, to its level's list."""
    if isinstance(record.get("wall_s"), (int, float)):
        observed.setdefault(int(record["level"]), []).append(float(record["wall_s"]))


@contextlib.contextmanager
def shared_ray_cluster(address: str | None) -> Iterator[None]:
    """Join (or start) the Ray cluster here and name it in RAY_ADDRESS while the block runs: the problems'
    own processes inherit it and `ray.init` reads it, so every problem's actors come from one cluster."""
    import ray

    from kernelevolve.eval.ray_evaluator import connect

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


# ------------------------------------------------------------------------------------ CLI
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kernelevolve.sweep", description=__doc__.split("\n\n")[0]
    )
    default_path = os.environ.get("KERNELBENCH_PATH") or str(DEFAULT_KERNELBENCH)
    parser.add_argument(
        "--kernelbench-path",
        type=Path,
        default=Path(default_path),
        help="KernelBench checkout or problems.jsonl (default: $KERNELBENCH_PATH or %(default)s)",
    )
    parser.add_argument("--out", type=Path, required=True, help="sweep folder (created; reused to resume)")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--ids", help="problem ids within each level, e.g. 1-10,19")
    parser.add_argument(
        "--sample", type=Path, help="a sample list, run in its order (see experiments/sweep_sample.md)"
    )
    parser.add_argument("--platform", default="cpu")
    parser.add_argument("--budget-evals", type=int, default=20, help="evaluations per problem")
    parser.add_argument(
        "--budget-seconds",
        type=float,
        default=120.0,
        help="search wall clock per problem, from when its seeds are proposed",
    )
    parser.add_argument("--time-limit-s", type=float, help="start no problem that would end after this")
    parser.add_argument(
        "--baseline-allowance-s",
        type=float,
        default=60.0,
        help="added to --budget-seconds to estimate one problem (worker start, baselines)",
    )
    parser.add_argument("--evaluator", choices=("local", "ray"), default="local")
    parser.add_argument(
        "--parallel",
        type=int,
        help="problems at once (default: one per accelerator; more share them round-robin)",
    )
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="run each problem's search in a process of its own: problems side by side then capture "
        "Inductor's code in parallel (one process does one capture at a time) and a crash ends only its "
        "own problem; costs a process start-up (a few seconds) per problem",
    )
    parser.add_argument(
        "--permissive",
        action="store_true",
        help="search in permissive mode (strict=false: kernels may keep cuBLAS/cuDNN calls through "
        "PyTorch) and report both strict (own kernels only) and permissive results; the default "
        "strict mode reports strict results only",
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="extra Hydra overrides for every problem (search=islands, platform.eval.timing_trials=50)",
    )
    parser.add_argument("--retry-failed", action="store_true", help="run again the problems whose run failed")
    parser.add_argument(
        "--rerun-before",
        type=_aware_time,
        metavar="TIME",
        help="run again the selected problems whose result finished before TIME (ISO 8601 with its offset), "
        "e.g. after a fix; each is run once, however many calls the re-run takes",
    )
    parser.add_argument("--max-problems", type=int, help="run at most this many problems in this call")
    parser.add_argument("--summary-only", action="store_true", help="rewrite summary.md/json and stop")
    parser.add_argument(
        "--summary-out",
        type=Path,
        help="with --summary-only and --sample: summarise the sample's problems of --out into this folder",
    )
    parser.add_argument(
        "--no-quiet-baselines",
        dest="quiet_baselines",
        action="store_false",
        help="skip measuring host-bound baselines again alone after the call's problems (GPU sweeps; "
        "see kernelevolve.sweep_quiet)",
    )
    parser.add_argument(
        "--kernelbench-judge",
        type=Path,
        metavar="PATH",
        help="a KernelBench checkout (or its src folder): after each problem, its winners also go through "
        "KernelBench's own evaluator and timing, in a process of their own, and its verdicts and times are "
        "recorded beside ours (docs/kernelbench_judge.md); needs a CUDA GPU",
    )
    parser.add_argument(
        "--kernelbench-judge-timeout-s",
        type=float,
        default=600.0,
        help="how long KernelBench's evaluator may take over one winner (default %(default)s)",
    )
    parser.add_argument(
        "--fresh-caches",
        action="store_true",
        help="start from cold caches (baselines, Triton, Inductor) in a new folder under --out: for "
        "measurements such as GPU scaling, where a warm cache from an earlier call would flatter a run",
    )
    return parser


CACHE_VARIABLES = ("KERNELEVOLVE_CACHE", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")


def use_fresh_caches(out: Path) -> Path:
    """Point every cache this process and its children (evaluation workers, a Ray cluster it starts)
    use at a new empty folder; returns it. A Ray cluster started elsewhere keeps its own environment."""
    root = out / "caches" / time.strftime("%Y%m%d-%H%M%S")
    for variable in CACHE_VARIABLES:
        folder = root / variable.lower()
        folder.mkdir(parents=True, exist_ok=True)
        os.environ[variable] = str(folder)
    return root


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    if args.summary_only:
        if args.summary_out is not None:
            if args.sample is None:
                log.error("--summary-out summarises a sample: give --sample FILE")
                return 2
            wanted = [record_key(level, problem_id) for level, problem_id in read_sample(args.sample)]
            write_summary(args.out, wanted, args.summary_out, f"sample {args.sample.name}")
            print(f"summary: {args.summary_out / 'summary.md'}")
            return 0
        write_summary(args.out)
        print(f"summary: {args.out / 'summary.md'}")
        return 0
    if args.fresh_caches:
        log.info("fresh caches in %s", use_fresh_caches(args.out))
    options = SweepOptions(
        kernelbench_path=args.kernelbench_path.expanduser().resolve(),
        out=args.out,
        platform=args.platform,
        levels=tuple(args.levels),
        ids=args.ids,
        sample=args.sample,
        budget_evals=args.budget_evals,
        budget_seconds=args.budget_seconds,
        time_limit_s=args.time_limit_s,
        baseline_allowance_s=args.baseline_allowance_s,
        evaluator=args.evaluator,
        parallel=args.parallel,
        sets=tuple(args.sets),
        retry_failed=args.retry_failed,
        rerun_before=args.rerun_before,
        max_problems=args.max_problems,
        permissive=args.permissive,
        fresh_caches=args.fresh_caches,
        isolate=args.isolate,
        quiet_baselines=args.quiet_baselines,
        kernelbench_judge=args.kernelbench_judge.expanduser() if args.kernelbench_judge else None,
        kernelbench_judge_timeout_s=args.kernelbench_judge_timeout_s,
    )
    try:
        outcome = Sweep(options).run()
    except (SweepError, FileNotFoundError) as exc:
        log.error("%s", exc)
        return 2
    overall = outcome.summary.get("overall", {})
    strict = (outcome.summary.get("modes") or {}).get("strict", {}).get("overall", {})
    print(
        f"sweep {options.out}: ran {len(outcome.ran)} now, {len(outcome.selected) - len(outcome.remaining)}"
        f"/{len(outcome.selected)} have results; correct {overall.get('correct', 0)}/{overall.get('problems', 0)}"
        + (
            f" ({strict.get('correct', 0)} with own kernels only)"
            if outcome.summary.get("mode") == "permissive"
            else ""
        )
    )
    if outcome.remaining:
        reason = "time limit" if outcome.stopped_by_time else "--max-problems"
        print(f"stopped by the {reason}: {len(outcome.remaining)} left; run the same command again to resume")
    print(f"summary: {options.out / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
