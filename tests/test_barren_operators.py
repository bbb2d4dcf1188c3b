"""An operator that declines must not starve the others (engine scheduling, CPU, end to end)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelevolve.app import run_search
from tests.hydra_config import FAST_RUN, compose_run_config


def _config(tmp_path: Path, operators: str) -> dict[str, Any]:
    overrides = [
        "platform=cpu",
        "+spec=softmax",
        f"search.operators={operators}",
        "search.termination.max_evaluations=7",
        "search.termination.wall_clock_s=240",
        *FAST_RUN,
        "platform.eval.correctness_trials=1",
        f"run.root={tmp_path}",
        "run.name=barren",
    ]
    return compose_run_config(overrides)


def test_a_declining_operator_listed_first_leaves_the_jobs_to_tune(tmp_path: Path) -> None:
    """graph_replay declines everything on the CPU platform. Listed before tune, it used to stay
    "untried" for the bandit, get every job, and end the search as proposals_exhausted."""
    results = run_search(_config(tmp_path, "[template,graph_replay,tune]")).results
    assert results["evaluations"] == 7, results["stop_reason"]
    assert results["stop_reason"].startswith("max_evaluations")
    assert results["evaluations_by_status"].get("ok", 0) >= 1
