"""Our own convolution's tunables measured on KernelBench problems, all in one call.

    python -m kernelevolve.bench.sweep.conv_bench --problems L1/57 L1/64 ... [--platform h200] [--out DIR]
        [--variants CONV_LOOP=fused,CONV_FP32_PRECISION=ieee ...] [--time-limit-s S]
        [--eval timing_trials=50 ...] [--workers-per-device N] [--kernelbench-path PATH] [--library]

With `--library` the seeds are instead the permissive ones that keep cuDNN's convolution
(`compiler/library_conv.py`, GPU platforms), the variants set its tunables (default: cuDNN's algorithm
timing off and on, LIBRARY_CONV_BENCHMARK), and the candidates are evaluated in permissive mode.

For each problem: the compiler seeds a strict search gets (our own kernels in place of cuDNN, in both
layouts where the operator offers both) that hold our convolution, each made into one child per
variant (tunables set as the tuning operator sets them) and evaluated through the search's harness
(LocalEvaluator with the platform's eval settings: correctness at full size, the same timer), and the
baselines (eager, eager at exact fp32 where that differs, torch.compile) measured once per problem as a
search measures them. Seeds that give the same child (the 3xTF32 twin under a variant that sets the
precision) are evaluated once. A table per problem goes to stdout; <out>/results.jsonl gets a line per
problem and one per evaluation as each finishes, <out>/candidates.jsonl each candidate's source. With a
time limit no problem starts that would end after it (each taken as long as the longest so far).
A failing candidate is a line of data; a usage error (unknown problem, bad variant) exits with 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from kernelevolve.platforms import Platform, load_platform
from kernelevolve.results.evaluation_log import feedback_excerpt
from kernelevolve.results.format import format_ms, format_speedup
from kernelevolve.types import Baseline, Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec, Status

log = logging.getLogger("kernelevolve.bench.sweep.conv_bench")

OWN_CONVOLUTION = "_ke_conv"  # in the source of every candidate that holds our convolution
DEFAULT_VARIANTS = tuple(
    f"CONV_LOOP={loop},CONV_FP32_PRECISION={fp32}"
    for loop in ("fused", "taps")
    for fp32 in ("ieee", "tf32x3")
)
LIBRARY_VARIANTS = ("LIBRARY_CONV_BENCHMARK=False", "LIBRARY_CONV_BENCHMARK=True")
RESULTS = "results.jsonl"
CANDIDATES = "candidates.jsonl"


class UsageError(ValueError):
    pass


@dataclass(frozen=True)
class Variant:
    text: str  # as given: NAME=VALUE,NAME=VALUE
    values: dict[str, Any]


@dataclass(frozen=True)
class Problem:
    key: str  # L1/57
    spec: KernelSpec | None
    seeds: tuple[Candidate, ...]  # the compiler seeds holding our convolution (or, --library, cuDNN's)
    proposed: int  # compiler seeds in all
    baselines: dict[str, float | None]  # eager_ms, eager_exact_ms, compile_ms (None: not measured)
    prepare_s: float  # capturing the seeds and measuring the baselines
    error: str = ""


@dataclass(frozen=True)
class Trial:
    seeds: tuple[int, ...]  # indices into Problem.seeds of the seeds that give this child
    variant: Variant
    child: Candidate


def parse_variant(text: str, library: bool = False) -> Variant:
    """`NAME=VALUE,...` over our convolution's declared tunables (`library`: those of cuDNN's calls), each
    value one of its choices."""
    from kernelevolve.variation.compiler.library_conv import LIBRARY_CONV_TUNABLES
    from kernelevolve.variation.compiler.own_conv import CONV_TUNABLES
    from kernelevolve.variation.tunables import find_tunables

    declared = LIBRARY_CONV_TUNABLES if library else CONV_TUNABLES
    choices = {t.name: t.choices for t in find_tunables("\n".join(declared))}
    values: dict[str, Any] = {}
    for item in text.split(","):
        name, equals, raw = (part.strip() for part in item.partition("="))
        if not equals or not name or not raw:
            raise UsageError(f"variant {text!r}: {item!r} is not NAME=VALUE")
        if name not in choices:
            raise UsageError(f"variant {text!r}: {name} is no tunable of ours; valid: {', '.join(choices)}")
        value = yaml.safe_load(raw)
        if value not in choices[name] or name in values:
            raise UsageError(
                f"variant {text!r}: {name}={raw} "
                + ("given twice" if name in values else f"is not one of {', '.join(map(str, choices[name]))}")
            )
        values[name] = value
    return Variant(text, values)


def parse_setting(text: str) -> tuple[str, Any]:
    """`NAME=VALUE` of an eval setting (its name is checked with the platform's settings)."""
    name, equals, raw = text.partition("=")
    if not equals or not raw:
        raise UsageError(f"eval setting {text!r} is not NAME=VALUE")
    return name.strip(), yaml.safe_load(raw)


def problem_keys(texts: Sequence[str], kernelbench_path: Path) -> list[str]:
    """`L<level>/<id>` of each argument; every one must be a problem in the KernelBench data."""
    from kernelevolve.bench.kernelbench.problems import list_problems
    from kernelevolve.bench.sweep.candidates import UnknownProblem, parse_key
    from kernelevolve.bench.sweep.run import record_key

    try:
        keys = [parse_key(text) for text in texts]
        known = {
            (p.level, p.problem_id) for p in list_problems(kernelbench_path, tuple({k[0] for k in keys}))
        }
    except (UnknownProblem, OSError) as exc:
        raise UsageError(str(exc)) from None
    missing = [record_key(level, pid) for level, pid in keys if (level, pid) not in known]
    if missing:
        raise UsageError(f"no problem {', '.join(missing)} in {kernelbench_path}")
    return [record_key(level, pid) for level, pid in keys]


def trials(seeds: Sequence[Candidate], variants: Sequence[Variant]) -> list[Trial]:
    """One child per seed and variant, each distinct child once (with every seed that gives it)."""
    from kernelevolve.variation.tuning import tuned_child

    by_id: dict[str, Trial] = {}
    for index, seed in enumerate(seeds):
        for variant in variants:
            child = tuned_child(seed, variant.values, operator="conv_bench")
            known = by_id.get(child.id)
            by_id[child.id] = Trial((*known.seeds, index) if known else (index,), variant, child)
    return list(by_id.values())


def seed_label(seed: Candidate) -> str:
    """Which layout the seed was captured in, and the precision its own kernels started with."""
    layout = "ref-layout" if seed.metadata.get("layout_optimization") is False else "inductor-layout"
    return f"{layout}/{seed.metadata.get('fp32_precision', 'ieee')}"


def _total(values: list[float | None]) -> float | None:
    return sum(v for v in values if v is not None) if values and None not in values else None


def baseline_ms(baselines: dict[str, Baseline]) -> dict[str, float | None]:
    """Eager, exact-fp32 eager and torch.compile, summed over the spec's shapes."""
    shapes = list(baselines.values())
    return {
        "eager_ms": _total([b.eager.median_ms for b in shapes]),
        "eager_exact_ms": _total([b.eager_exact.median_ms if b.eager_exact else None for b in shapes]),
        "compile_ms": _total([b.compiled.median_ms if b.compiled else None for b in shapes]),
    }


def evaluation_line(problem: Problem, trial: Trial, report: EvalReport) -> dict[str, Any]:
    seeds = [problem.seeds[i] for i in trial.seeds]
    ms = _total([t.median_ms for t in report.latency.values()]) if report.ok else None
    base = problem.baselines
    ratio = {
        f"vs_{name.removesuffix('_ms')}": value / ms if value and ms else None for name, value in base.items()
    }
    return {
        "kind": "evaluation",
        "problem": problem.key,
        "spec": problem.spec.name if problem.spec else None,
        "seed": seed_label(seeds[0]),
        "seed_id": seeds[0].id,
        "seed_metadata": {k: v for k, v in seeds[0].metadata.items() if k != "params"},
        "also_seeds": [seed_label(s) for s in seeds[1:]],
        "variant": trial.variant.text,
        "conv_params": {
            k: v
            for k, v in trial.child.metadata["params"].items()
            if k.startswith(("CONV_", "LIBRARY_CONV_"))
        },
        "candidate_id": trial.child.id,
        "status": report.status.value,
        "error_name": report.error_name,
        "feedback": "" if report.ok else feedback_excerpt(report.feedback, report.error_name),
        "max_abs_error": report.max_abs_error,
        "ms": ms,
        **base,
        **ratio,
        "latency": {shape: t.to_json() for shape, t in report.latency.items()},
        "flags": list(report.flags),
        "wall_s": report.wall_s,
        "phase_s": report.phase_s,
    }


class Bench:
    """Problems prepared and measured through one LocalEvaluator, each result appended to <out>."""

    def __init__(
        self,
        platform: Platform,
        settings: EvalSettings,
        variants: Sequence[Variant],
        out: Path,
        kernelbench_path: Path,
        workers_per_device: int | None = None,
        library: bool = False,
    ) -> None:
        from kernelevolve.eval.local import LocalEvaluator
        from kernelevolve.eval.local import workers_per_device as default_workers

        # cuDNN's calls pass only a permissive check
        settings = replace(settings, strict=False) if library else settings
        self.library = library
        self.platform, self.settings, self.variants = platform, settings, list(variants)
        self.out, self.kernelbench_path = out, kernelbench_path
        out.mkdir(parents=True, exist_ok=True)
        workers = default_workers(workers_per_device, platform)
        self.evaluator = LocalEvaluator(platform, settings, workers_per_device=workers)

    def close(self) -> None:
        self.evaluator.close()

    def prepare(self, key: str) -> Problem:
        """The problem's spec (scaled down on the CPU), the strict compiler seeds holding our
        convolution (`library`: the permissive ones holding cuDNN's), and the baselines, measured as a
        search measures them (cached for its reports)."""
        from kernelevolve.search.graph import SearchGraph
        from kernelevolve.search.interfaces import ProposalContext
        from kernelevolve.specs.loading import resolve_spec
        from kernelevolve.variation.compiler.library_conv import LIBRARY_CONV_FUNCTION
        from kernelevolve.variation.compiler_seed import CompilerSeedOperator

        start = time.monotonic()
        none: dict[str, float | None] = {"eager_ms": None, "eager_exact_ms": None, "compile_ms": None}
        try:
            config = {"kernelbench": {"path": str(self.kernelbench_path)}}
            spec = resolve_spec(f"kernelbench:{key}", self.platform, config)
            context = ProposalContext(spec, self.platform, SearchGraph(), (), random.Random(0), ("triton",))
            seeds = CompilerSeedOperator(strict=not self.library).propose(context)
        except Exception as exc:  # reported as the problem's line; the other problems still run
            log.exception("%s: not prepared", key)
            return Problem(key, None, (), 0, none, time.monotonic() - start, f"{type(exc).__name__}: {exc}")
        marker = f"{LIBRARY_CONV_FUNCTION}(" if self.library else OWN_CONVOLUTION
        own = tuple(s for s in seeds if marker in s.source)
        if not own:
            what = "cuDNN's convolution" if self.library else "our conv"
            return Problem(key, spec, own, len(seeds), none, time.monotonic() - start, f"no seed with {what}")
        try:
            baselines = baseline_ms(self.evaluator.baselines(spec, self.platform.name))
        except Exception as exc:  # the machinery: the candidates are still measured, without ratios
            log.error("%s: baselines not measured: %s", key, exc)
            return Problem(key, spec, own, len(seeds), none, time.monotonic() - start, str(exc))
        return Problem(key, spec, own, len(seeds), baselines, time.monotonic() - start)

    def measure(self, problem: Problem) -> list[dict[str, Any]]:
        """The problem's evaluations, in the order of its trials; each line appended as it comes."""
        self._append(
            RESULTS,
            {
                "kind": "problem",
                "problem": problem.key,
                "platform": self.platform.name,
                "spec": problem.spec.name if problem.spec else None,
                "proposed_seeds": problem.proposed,
                "conv_seeds": [seed_label(s) for s in problem.seeds],
                **problem.baselines,
                "prepare_s": problem.prepare_s,
                "error": problem.error,
            },
        )
        if problem.spec is None or not problem.seeds:
            return []
        planned = trials(problem.seeds, self.variants)
        futures = [
            self.evaluator.submit(EvalRequest(t.child, problem.spec, self.platform.name, self.settings))
            for t in planned
        ]
        lines = []
        for trial, future in zip(planned, futures, strict=True):
            try:
                report = future.result()
            except Exception as exc:  # the machinery (HarnessError, a child that cannot start): recorded
                report = EvalReport(trial.child.id, Status.RUNTIME_ERROR, type(exc).__name__, str(exc))
            lines.append(evaluation_line(problem, trial, report))
            self._append(RESULTS, lines[-1])
            self._append(CANDIDATES, {"candidate_id": trial.child.id, "source": trial.child.source})
        return lines

    def _append(self, name: str, line: dict[str, Any]) -> None:
        with (self.out / name).open("a") as handle:
            handle.write(json.dumps(line, default=str) + "\n")


def format_table(problem: Problem, lines: list[dict[str, Any]]) -> str:
    """The problem's baselines, then a row per evaluation, then the first line of each failure."""
    if not lines:
        return f"{problem.key}: nothing measured ({problem.error})"
    base = {name: format_ms(ms) for name, ms in problem.baselines.items()}
    title = (
        f"{problem.key} {lines[0]['spec']}: eager {base['eager_ms']} ms, eager exact "
        f"{base['eager_exact_ms']} ms, torch.compile {base['compile_ms']} ms"
    )
    rows = [
        ("seed (layout/precision)", "variant", "status", "ms", "vs eager", "vs eager exact", "vs compile")
    ]
    for line in lines:
        seed = line["seed"] + (f" (+{len(line['also_seeds'])})" if line["also_seeds"] else "")
        vs = [format_speedup(line[f"vs_{name}"]) for name in ("eager", "eager_exact", "compile")]
        rows.append((seed, line["variant"].replace("CONV_", ""), line["status"], format_ms(line["ms"]), *vs))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    body = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    failures = [
        f"  {line['variant']}: {line['error_name']}: {line['feedback']}" for line in lines if line["feedback"]
    ]
    return "\n".join([title, *body, *failures])


def build_parser() -> argparse.ArgumentParser:
    from kernelevolve.bench.sweep.driver import DEFAULT_KERNELBENCH

    parser = argparse.ArgumentParser(
        prog="python -m kernelevolve.bench.sweep.conv_bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--kernelbench-path",
        type=Path,
        default=Path(os.environ.get("KERNELBENCH_PATH") or DEFAULT_KERNELBENCH),
        help="KernelBench checkout or problems.jsonl (default: $KERNELBENCH_PATH or %(default)s)",
    )
    parser.add_argument("--platform", default="h200", help="platforms/<name>.yaml; cpu scales sizes down")
    parser.add_argument("--problems", nargs="+", required=True, metavar="L1/57", help="KernelBench problems")
    parser.add_argument(
        "--variants",
        nargs="+",
        metavar="NAME=VALUE,...",
        help="our convolution's tunables, one variant an argument (default: CONV_LOOP fused/taps x "
        "CONV_FP32_PRECISION ieee/tf32x3; with --library LIBRARY_CONV_BENCHMARK False/True)",
    )
    parser.add_argument(
        "--library",
        action="store_true",
        help="the permissive seeds that keep cuDNN's convolution, and its tunables, instead of ours",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("runs/conv_bench"), help="folder for the JSONL files"
    )
    parser.add_argument("--time-limit-s", type=float, help="start no problem that would end after this")
    parser.add_argument(
        "--workers-per-device", type=int, help="evaluation children per device (default: 2 a GPU, 1 on cpu)"
    )
    parser.add_argument(
        "--eval",
        dest="settings",
        action="extend",
        nargs="+",
        default=[],
        metavar="NAME=VALUE",
        help="eval settings over the platform's (timing_trials=20, correctness_trials=2, timeout_s=300)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from kernelevolve.verify import platform_settings

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    try:
        texts = args.variants or list(LIBRARY_VARIANTS if args.library else DEFAULT_VARIANTS)
        variants = [parse_variant(text, args.library) for text in texts]
        overrides = tuple(parse_setting(text) for text in args.settings)
        platform = load_platform(args.platform)
        settings = platform_settings(platform.name, overrides)
        keys = problem_keys(args.problems, args.kernelbench_path)
    except (UsageError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    start = time.monotonic()

    def fits(seconds: float) -> bool:
        return args.time_limit_s is None or time.monotonic() - start + seconds <= args.time_limit_s

    bench = Bench(
        platform, settings, variants, args.out, args.kernelbench_path, args.workers_per_device, args.library
    )
    # The next problem is prepared (seeds captured, baselines measured) while this one's candidates are
    # evaluated, as a search's proposal threads capture seeds while its evaluations run. It starts only
    # if it would end in time: after this problem and its own turn, each as long as the longest so far.
    longest, not_started = 0.0, list[str]()
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="conv-bench-prepare") as preparing:
            upcoming = preparing.submit(bench.prepare, keys[0])
            for index in range(len(keys)):
                began = time.monotonic()
                problem = upcoming.result()
                last = index + 1 == len(keys) or not fits(2 * longest)
                if not last:
                    upcoming = preparing.submit(bench.prepare, keys[index + 1])
                print(format_table(problem, bench.measure(problem)) + "\n", flush=True)
                longest = max(longest, time.monotonic() - began)
                if last:
                    not_started = keys[index + 1 :]
                    break
    finally:
        bench.close()
    if not_started:
        print(f"time limit of {args.time_limit_s:g} s: not started {' '.join(not_started)}")
    print(f"{time.monotonic() - start:.0f} s; results in {args.out / RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
