"""One problem of a sweep: its config (composed from conf/ as the Hydra CLI would), its device, its record.

`run_problem` never raises: a run that fails is a record with status "run_failed" and the error.
"""

from __future__ import annotations

import copy
import logging
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kernelevolve.bench.kernelbench.problems import Problem

log = logging.getLogger("kernelevolve.bench.sweep")


class SweepError(ValueError):
    """A bad sweep request; the message says what to change."""


@dataclass(frozen=True)
class SweepOptions:
    kernelbench_path: Path
    out: Path
    platform: str = "cpu"
    levels: tuple[int, ...] = (1, 2, 3)
    ids: str | None = None
    sample: Path | None = None
    budget_evals: int = 20
    budget_seconds: float = 120.0
    time_limit_s: float | None = None
    baseline_allowance_s: float = 60.0
    evaluator: str = "local"
    parallel: int | None = None
    sets: tuple[str, ...] = ()
    retry_failed: bool = False
    # results finished before this time (ISO 8601, with its offset) are run again: after a fix
    rerun_before: datetime | None = None
    max_problems: int | None = None
    permissive: bool = False  # strict=false: library calls allowed; records carry strict and permissive bests
    isolate: bool = False  # each problem's search in a process of its own (run_problem_isolated)
    fresh_caches: bool = False  # this call started from empty caches (recorded with the call)
    # after the call's problems: host-bound baselines measured again alone (kernelevolve.bench.sweep.quiet)
    quiet_baselines: bool = True
    # a KernelBench checkout (or its src): each problem's winners also judged by its own evaluator
    kernelbench_judge: Path | None = None
    kernelbench_judge_timeout_s: float = 600.0
    # shipped specs to sweep instead of KernelBench problems (names, or "all": `suite.py`), as level 0
    specs: tuple[str, ...] = ()

    @property
    def estimate_s(self) -> float:
        """What one problem is expected to take: its search budget plus start-up and baselines."""
        return self.budget_seconds + self.baseline_allowance_s


# How records and calls write their times (local time with its UTC offset); `sweep.finished_before` reads it.
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"
LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s: %(message)s"  # the sweep's, and its problems' processes


def problem_key(problem: Problem) -> str:
    return record_key(problem.level, problem.problem_id)


def record_key(level: int, problem_id: int) -> str:
    """A problem as records, logs and the command lines name it: L1/19."""
    return f"L{level}/{problem_id}"


def problem_slug(problem: Problem) -> str:
    return record_slug(problem.level, problem.problem_id)


def record_slug(level: int, problem_id: int) -> str:
    """A problem's name in a sweep folder: its record `results/<slug>.json` and its run `runs/<slug>`."""
    return f"L{level}_{problem_id:03d}"


# ---------------------------------------------------------------------------------- config
def compose_base_config(options: SweepOptions) -> dict[str, Any]:
    """conf/config.yaml + groups with the sweep's overrides, as the Hydra CLI would compose it."""
    from kernelevolve.config import compose, to_plain

    overrides = [
        f"platform={options.platform}",
        f"evaluator={options.evaluator}",
        f"search.termination.max_evaluations={options.budget_evals}",
        f"search.termination.wall_clock_s={options.budget_seconds:g}",
        "progress=false",
    ]
    if options.evaluator == "ray":
        overrides.append("evaluator.num_actors=1")  # each problem's run holds one accelerator
    if options.permissive:
        overrides.append("strict=false")
    overrides += list(options.sets)
    try:
        plain = to_plain(compose(overrides))
    except Exception as exc:  # Hydra's override and composition errors name what is wrong
        raise SweepError(f"cannot compose the config (overrides {overrides}): {exc}") from exc
    plain["kernelbench"] = {**(plain.get("kernelbench") or {}), "path": str(options.kernelbench_path)}
    return plain


def problem_config(
    base: dict[str, Any], problem: Problem, runs_dir: Path, device: str | None
) -> dict[str, Any]:
    cfg = copy.deepcopy(base)
    cfg["spec"] = problem_spec(problem)
    cfg["run"] = {**(cfg.get("run") or {}), "root": str(runs_dir), "name": problem_slug(problem)}
    partial = _resumable_run(runs_dir, problem_slug(problem))
    if partial is not None:
        cfg["resume"] = str(partial)
    if device is not None:
        cfg["platform"]["devices"] = [device]
    return cfg


def problem_spec(problem: Problem) -> str:
    """The spec argument a problem runs by: its own (a shipped spec), else kernelbench:LEVEL/ID."""
    return problem.spec or f"kernelbench:{problem.level}/{problem.problem_id}"


def record_spec(record: dict[str, Any]) -> str:
    """The spec argument of a problem's record (records before shipped-spec sweeps have no "spec")."""
    return str(record.get("spec") or f"kernelbench:{record['level']}/{record['problem_id']}")


def _resumable_run(runs_dir: Path, slug: str) -> Path | None:
    """The newest run directory of this problem that has a checkpoint (a run cut off earlier)."""
    found = [
        p for p in runs_dir.glob(f"{slug}*") if (p / "graph.jsonl").is_file() and (p / "spec.json").is_file()
    ]
    found = [p for p in found if p.name == slug or re.fullmatch(rf"{slug}-\d+", p.name)]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def device_slots(base: dict[str, Any], options: SweepOptions) -> list[str | None]:
    """One entry per concurrent problem: a device for the local evaluator, None where Ray places runs."""
    platform_cfg = base["platform"]
    if options.evaluator == "ray":
        from kernelevolve.eval.ray_actor import connect

        connect((base.get("evaluator") or {}).get("address"))  # once, here, before runs start in threads
        return [None] * (options.parallel or _ray_accelerators(base))
    if str(platform_cfg["name"]) == "cpu" or platform_cfg.get("devices") == ["cpu"]:
        return ["cpu"] * (options.parallel or 1)
    devices = [str(d) for d in platform_cfg.get("devices") or _visible_gpus()]
    # More problems than devices share them round-robin: their compiles overlap while the per-GPU
    # device lock still gives each correctness check and timing the GPU to itself.
    count = options.parallel or len(devices)
    return [devices[k % len(devices)] for k in range(count)]


def gpu_share(base: dict[str, Any], options: SweepOptions, slots: list[str | None]) -> float | None:
    """The share of one GPU each concurrent problem runs on (None on the CPU platform)."""
    if str(base["platform"]["name"]) == "cpu":
        return None
    if options.evaluator == "ray":
        return float((base.get("evaluator") or {}).get("num_gpus_per_actor") or 1.0)
    devices = {slot for slot in slots if slot and slot != "cpu"}
    return len(devices) / len(slots) if devices else None


def _visible_gpus() -> list[str]:
    import torch

    count = torch.cuda.device_count()
    if count == 0:
        raise SweepError("no GPU is visible: use --platform cpu, or run where the platform's GPUs are")
    return [f"cuda:{i}" for i in range(count)]


def _ray_accelerators(base: dict[str, Any]) -> int:
    from kernelevolve.eval.ray_actor import cluster_accelerators

    evaluator = base.get("evaluator") or {}
    if str(base["platform"]["name"]) == "cpu" and not evaluator.get("num_gpus_per_actor"):
        return 1
    gpus = float(evaluator.get("num_gpus_per_actor") or 1.0)
    count = cluster_accelerators(
        gpus, evaluator.get("accelerator_type"), dict(evaluator.get("resources") or {})
    )
    if count < 1:
        raise SweepError("the Ray cluster has no accelerator this platform's actors can use")
    return count


# ----------------------------------------------------------------------------------- runs
def _record_head(cfg: dict[str, Any], problem: Problem) -> dict[str, Any]:
    return {
        "started_at": time.strftime(TIME_FORMAT),
        "problem": problem_key(problem),
        "level": problem.level,
        "problem_id": problem.problem_id,
        "name": problem.name,
        "spec": problem_spec(problem),
        "platform": cfg["platform"]["name"],
        "evaluator": (cfg.get("evaluator") or {}).get("name", "local"),
    }


def run_problem(cfg: dict[str, Any], problem: Problem) -> dict[str, Any]:
    """One search; never raises for a failed run (that is a 'run_failed' record)."""
    from kernelevolve.app import run_search

    start = time.monotonic()
    record = _record_head(cfg, problem)
    try:
        result = run_search(cfg)
    except Exception as exc:
        log.exception("%s %s: the run failed", problem_key(problem), problem.name)
        record.update(_failed(exc))
    else:
        record.update(record_from_results(result.results))
        record["run_dir"] = str(result.run_dir)
    record["wall_s"] = time.monotonic() - start
    record["finished_at"] = time.strftime(TIME_FORMAT)
    return record


CHILD_EXIT_S = 60.0  # how long a problem's process may take to exit once it has sent its record


def run_problem_isolated(
    cfg: dict[str, Any], problem: Problem, target: Callable[..., dict[str, Any]] = run_problem
) -> dict[str, Any]:
    """`target` (run_problem) in a process of its own, so that problems run side by side do not share
    Dynamo's and the tracing lock (Inductor's captures of a level-3 network take minutes, one process
    runs them one at a time) and a crash ends only its own problem: a process that dies without a record
    is a 'run_failed' one with its exit code. The child logs like this process, to the same stderr."""
    import multiprocessing

    start = time.monotonic()
    head = _record_head(cfg, problem)
    context = multiprocessing.get_context("spawn")  # no fork of a process holding CUDA, Ray or threads
    receiver, sender = context.Pipe(duplex=False)
    level = logging.getLogger().getEffectiveLevel()
    child = context.Process(
        target=_child_main, args=(target, cfg, problem, sender, level), name=f"sweep-{problem_slug(problem)}"
    )
    child.start()
    sender.close()  # the child holds the only sending end: a child that dies closes the pipe
    try:
        record: dict[str, Any] = receiver.recv()
    except EOFError:
        child.join()
        log.error(
            "%s %s: its process died (exit code %s)", problem_key(problem), problem.name, child.exitcode
        )
        record = {
            **head,
            **_failed(
                RuntimeError(f"the problem's process died without a record (exit code {child.exitcode})")
            ),
            "wall_s": time.monotonic() - start,
            "finished_at": time.strftime(TIME_FORMAT),
        }
    finally:
        receiver.close()
    child.join(timeout=CHILD_EXIT_S)
    if child.is_alive():  # the record is in; what hangs at exit (a thread, a driver shutdown) must not
        log.warning(
            "%s: its process did not exit %.0f s after its record; killed", problem_key(problem), CHILD_EXIT_S
        )
        child.kill()
        child.join()
    return record


def _child_main(
    target: Callable[..., dict[str, Any]], cfg: dict[str, Any], problem: Problem, sender: Any, level: int
) -> None:
    """The problem's search, its record sent back, then the process ends at once: no wait for proposals
    still running when the search stopped (a capture of another seed, up to minutes), which only the
    thread joins at a normal exit would need, and which the sweep's GPU slot would wait for idle."""
    logging.basicConfig(level=level, format=LOG_FORMAT)
    search = {**(cfg.get("search") or {}), "proposal_drain_s": 0.0}
    sender.send(target({**cfg, "search": search}, problem))
    sender.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _failed(exc: BaseException) -> dict[str, Any]:
    return {
        "status": "run_failed",
        "correct": False,
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": "".join(traceback.format_exception(exc))[-4000:],
    }


def _over_shapes(baselines: dict[str, Any], timing: str, field: str = "median_ms") -> float | None:
    """A baseline timing's `field` summed over the shapes; None unless every shape has it."""
    values: list[float | None] = [(b.get(timing) or {}).get(field) for b in baselines.values()]
    known = [v for v in values if v is not None]
    return sum(known) if known and len(known) == len(values) else None


def record_from_results(results: dict[str, Any]) -> dict[str, Any]:
    """The per-problem fields of a sweep record, from a run's results.json.

    The top-level winner fields are the run's best (in a permissive run it may call PyTorch's
    libraries); `strict` holds the best with own kernels only and `permissive` the run's best in a
    permissive run (None in a strict one, which measures no permissive result).
    """
    best = results.get("best")
    baselines = results.get("baselines") or {}
    strict_run = bool(results.get("strict", True))
    # A strict run accepted nothing else, so its best is its strict best (results.json from before
    # best_strict included); a permissive run's strict best is the best of its own-kernel nodes.
    strict_best = best if strict_run else (results.get("best_strict") if best else None)
    record: dict[str, Any] = {
        "status": "ok" if best else "no_correct_kernel",
        "correct": bool(best),
        "mode": "strict" if strict_run else "permissive",
        "eager_ms": _over_shapes(baselines, "eager"),
        "compile_ms": _over_shapes(baselines, "compiled"),
        # why torch.compile has no time, where it failed: the first failing shape's error
        "compile_error": _first_compile_error(baselines),
        # the host's median time to issue one call (GPU timing): near the call's time, the host set it
        "eager_host_ms": _over_shapes(baselines, "eager", "host_ms"),
        "compile_host_ms": _over_shapes(baselines, "compiled", "host_ms"),
        **_winner_fields(best),
        # eager at the candidates' precision (exact fp32 convolutions), where that differs
        "eager_exact_ms": _over_shapes(baselines, "eager_exact"),
        # torch.compile at that precision, where its default output missed the tolerance
        "compile_exact_ms": _over_shapes(baselines, "compiled_exact"),
        "compile_exact_within_tolerance": _at_every_shape(baselines, "compiled_exact_within_tolerance"),
        # torch.compile with CUDA graphs, where its default time was host-bound
        "compile_graphs_ms": _over_shapes(baselines, "compiled_graphs"),
        # do the baselines' own outputs meet the tolerance at every shape (None: not checked)
        "eager_within_tolerance": _at_every_shape(baselines, "eager_within_tolerance"),
        "compile_within_tolerance": _at_every_shape(baselines, "compiled_within_tolerance"),
        "compile_max_error": max(
            (e for b in baselines.values() if (e := b.get("compiled_max_error")) is not None), default=None
        ),
        # the winner evaluated once more with every timed call: "ok" where its times are the reported ones
        "confirmation_status": ((best or {}).get("confirmation") or {}).get("status"),
        "own_kernels_only": best.get("own_kernels_only") if best else None,
        "library_share": ((best or {}).get("time_split") or {}).get("library_share"),
        "strict": {"correct": bool(strict_best), **_winner_fields(strict_best)},
        "permissive": None if strict_run else {"correct": bool(best), **_winner_fields(best)},
        "evaluations": results.get("evaluations", 0),
        "evaluations_by_status": {k: v for k, v in (results.get("evaluations_by_status") or {}).items() if v},
        "stop_reason": results.get("stop_reason", ""),
        "search_wall_s": (results.get("time") or {}).get("wall_s"),
        "seed_proposal_s": results.get("seed_proposal_s"),  # before the search's clock starts
        # where the evaluations' own time went (static, compile, correctness, timing...), summed over them
        "evaluation_stages_s": (results.get("time") or {}).get("evaluation_stages_s"),
        "scaling": ((results.get("spec") or {}).get("scaling") or {}).get("constants"),
        "error": None,
        # one compact entry per evaluated candidate, in evaluation order (kernelevolve.results.evaluation_log);
        # `python -m kernelevolve.bench.sweep.candidates` prints them
        "candidates": list(results.get("evaluation_log") or []),
        "versions": results.get("versions"),  # kernelevolve, torch, triton... the run ran with
    }
    _add_roofline(record, results)
    record["precision_verdicts"] = precision_verdicts(record["candidates"], best)
    return record


def precision_verdicts(log: list[dict[str, Any]], best: dict[str, Any] | None) -> dict[str, Any] | None:
    """Where the spec checks at PyTorch's defaults and exact fp32 differs (KernelBench's protocol on GPU
    convolutions): how many candidates each verdict accepts, and the winner's at exact fp32. A candidate
    the protocol rejected was compared at exact fp32 on the trials it reached, its first at least."""
    from kernelevolve.specs.precision import EXACT_FP32_CORRECT, EXACT_FP32_INCORRECT

    judged = [e for e in log if {EXACT_FP32_CORRECT, EXACT_FP32_INCORRECT} & set(e.get("flags") or ())]
    if not judged:
        return None
    exact = [e for e in judged if EXACT_FP32_CORRECT in e.get("flags", ())]
    protocol = [e for e in judged if e.get("status") == "ok"]
    return {
        "checked": len(judged),
        "protocol_correct": len(protocol),
        "exact_fp32_correct": len(exact),
        "exact_fp32_only": sum(1 for e in exact if e.get("status") != "ok"),
        "protocol_only": sum(1 for e in protocol if EXACT_FP32_CORRECT not in e.get("flags", ())),
        "winner_exact_fp32_correct": (EXACT_FP32_CORRECT in (best.get("flags") or ())) if best else None,
    }


def _add_roofline(record: dict[str, Any], results: dict[str, Any]) -> None:
    """The spec's roofline floor summed over its shapes, and each winner's fraction of it."""
    from kernelevolve.eval.roofline import fraction, total_floor_ms

    shapes = [s.get("name") for s in (results.get("spec") or {}).get("shapes") or []]
    floor = total_floor_ms(results.get("roofline_floor_ms") or {}, shapes)
    record["roofline_floor_ms"] = floor
    record["roofline_fraction"] = fraction(floor, record.get("best_ms"))
    for side in ("strict", "permissive"):
        entry = record.get(side)
        if isinstance(entry, dict):
            entry["roofline_fraction"] = fraction(floor, entry.get("best_ms"))


def _first_compile_error(baselines: dict[str, Any]) -> str | None:
    """The first shape's torch.compile failure, prefixed by the shape's name; None if none failed."""
    for shape, baseline in baselines.items():
        if error := baseline.get("compile_error"):
            return f"{shape}: {error.splitlines()[0][:300]}"
    return None


def _at_every_shape(baselines: dict[str, Any], key: str) -> bool | None:
    """False if any shape's baseline misses the tolerance, True if every shape was checked and meets it."""
    values = [b.get(key) for b in baselines.values()]
    if False in values:
        return False
    return True if values and None not in values else None


def _winner_fields(best: dict[str, Any] | None) -> dict[str, Any]:
    """Time (summed over shapes), speedups and origin of one results.json winner summary."""
    if not best:
        return dict.fromkeys(
            (
                "best_ms",
                "speedup_vs_eager",
                "speedup_vs_compile",
                "winner_backend",
                "winner_operator",
                "winner_fp32_precision",
            )
        )
    times = [row["best_ms"] for row in best.get("shapes", [])]
    return {
        "best_ms": sum(times) if times and None not in times else None,
        "speedup_vs_eager": best.get("speedup_vs_eager"),
        "speedup_vs_compile": best.get("speedup_vs_compile"),
        "winner_backend": best.get("backend"),
        "winner_operator": best.get("operator"),
        # what its fp32 GEMMs/convolutions compute in where it says ("tf32": convolutions as eager runs
        # them), so a summary can show which results rest on TF32
        "winner_fp32_precision": (best.get("metadata") or {}).get("fp32_precision"),
    }
