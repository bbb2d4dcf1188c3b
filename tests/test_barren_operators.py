"""An operator that declines must not starve the others (engine scheduling, CPU, end to end)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelevolve.app import run_search


def _config(tmp_path: Path, operators: str) -> dict[str, Any]:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from kernelevolve.paths import CONF_DIR

    overrides = [
        "platform=cpu",
        "+spec=softmax",
        f"search.operators={operators}",
        "search.termination.max_evaluations=7",
        "search.termination.wall_clock_s=240",
        "platform.eval.timing_trials=2",
        "platform.eval.correctness_trials=1",
        "platform.eval.warmup_trials=1",
        "platform.eval.measure_compile_baseline=false",
        "kb.enabled=false",
        "kb.record_past_wins=false",
        "progress=false",
        f"run.root={tmp_path}",
        "run.name=barren",
    ]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def test_a_declining_operator_listed_first_leaves_the_jobs_to_tune(tmp_path: Path) -> None:
    """graph_replay declines everything on the CPU platform. Listed before tune, it used to stay
    "untried" for the bandit, get every job, and end the search as proposals_exhausted."""
    results = run_search(_config(tmp_path, "[template,graph_replay,tune]")).results
    assert results["evaluations"] == 7, results["stop_reason"]
    assert results["stop_reason"].startswith("max_evaluations")
    assert results["evaluations_by_status"].get("ok", 0) >= 1
