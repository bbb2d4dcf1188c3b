"""KernelBench sweeps: one search per problem, resumable, in chunks that fit a device lease.

    python -m kernelevolve.bench.sweep --kernelbench-path PATH --levels 1 2 --ids 1-10,19 \\
        --platform h200 --budget-evals 20 --budget-seconds 120 --out experiments/sweeps/NAME \\
        --time-limit-s 500 [--sample FILE] [--evaluator local|ray] [--parallel N] [--permissive] \\
        [--kernelbench-judge PATH] [--set key=value ...]
    python -m kernelevolve.bench.sweep --specs all --platform h200 ... # the shipped specs (suite.py)

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
search in a process of its own (`run.run_problem_isolated`). `--kernelbench-judge PATH` also runs
each problem's winners through KernelBench's own evaluator (`kernelevolve.bench.kernelbench.judge`).

By default problems are searched in strict mode (every FLOP in our own kernels) and the summary
reports strict results only. `--permissive` (or `--set strict=false`) searches in permissive mode,
where kernels may keep PyTorch's library calls (cuBLAS, cuDNN), and the summary reports both: the
best kernel with own kernels only ("strict") and the best kernel overall ("permissive").
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from kernelevolve.bench.sweep.driver import DEFAULT_KERNELBENCH, Sweep, _aware_time
from kernelevolve.bench.sweep.run import (
    LOG_FORMAT,
    SweepError,
    SweepOptions,
    record_key,
)
from kernelevolve.bench.sweep.sample import read_sample
from kernelevolve.bench.sweep.summary_markdown import write_summary

log = logging.getLogger("kernelevolve.bench.sweep")


# ------------------------------------------------------------------------------------ CLI
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kernelevolve.bench.sweep", description=__doc__.split("\n\n")[0]
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
    parser.add_argument(
        "--specs",
        action="extend",
        nargs="+",
        default=[],
        metavar="NAMES",
        help="sweep shipped specs (operators/spec) instead of KernelBench problems: 'all' or names, "
        "comma- or space-separated; they are level 0, numbered in the suite's sorted order (--ids selects)",
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
        "see kernelevolve.bench.sweep.quiet)",
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
        specs=tuple(args.specs),
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
