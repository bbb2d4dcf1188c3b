"""Sweep options for tests: a CPU sweep small and fast enough for CI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelevolve.bench.sweep.run import SweepOptions
from tests.hydra_config import FAST_RUN
from tests.kernelbench_data import KERNELBENCH

# The end-to-end tests' fast run settings, and KernelBench's sizes scaled further down.
FAST_SETS = (*FAST_RUN, "kernelbench.cpu_budget_elements=4096")


def sweep_options(tmp_path: Path, **changes: Any) -> SweepOptions:
    """A CPU sweep of level 1 into `tmp_path / "sweep"`, 3 evaluations a problem; `changes` override."""
    defaults: dict[str, Any] = dict(
        kernelbench_path=KERNELBENCH,
        out=tmp_path / "sweep",
        platform="cpu",
        levels=(1,),
        budget_evals=3,
        budget_seconds=40.0,
        baseline_allowance_s=20.0,
        sets=FAST_SETS,
    )
    defaults.update(changes)
    return SweepOptions(**defaults)


def problem_record(problem: str, status: str = "ok", **fields: Any) -> dict[str, Any]:
    """A sweep result record for `problem` ("L1/19"): correct where `status` is "ok", 3 evaluations in
    10 s, named "19_op"; `fields` add to it or override."""
    level, pid = problem[1:].split("/")
    return {
        "problem": problem,
        "level": int(level),
        "problem_id": int(pid),
        "name": f"{pid}_op",
        "status": status,
        "correct": status == "ok",
        "evaluations": 3,
        "wall_s": 10.0,
        **fields,
    }


def record_of_child(cfg: dict[str, Any], problem: Any) -> dict[str, Any]:
    """A stand-in search for a problem's own process (run_problem_isolated): its process id and its cfg."""
    import os

    return {"problem": f"L{problem.level}/{problem.problem_id}", "pid": os.getpid(), "cfg": cfg}


def die_in_child(cfg: dict[str, Any], problem: Any) -> dict[str, Any]:
    """A search whose process dies without a record (a segfault in Dynamo, the OOM killer)."""
    import os

    os._exit(7)


def hang_after_the_record(cfg: dict[str, Any], problem: Any) -> dict[str, Any]:
    """A search that returns its record, then leaves a non-daemon thread that never ends behind it."""
    import threading
    import time

    threading.Thread(target=time.sleep, args=(3600,)).start()
    return record_of_child(cfg, problem)
