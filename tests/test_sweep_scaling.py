"""GPU scaling from two sweeps' call logs, and cold caches for such measurements."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kernelevolve.bench.sweep.cli import CACHE_VARIABLES, use_fresh_caches
from kernelevolve.bench.sweep.scaling import ScalingError, compare, main, markdown


def _sweep(root: Path, gpus: int, wall_s: float, evaluations: int, fresh: bool = True, ran: int = 4) -> Path:
    problems = [f"L1/{k}" for k in range(1, ran + 1)]
    (root / "results").mkdir(parents=True)
    for key in problems:
        pid = int(key.split("/")[1])
        record = {"problem": key, "level": 1, "problem_id": pid, "evaluations": evaluations}
        (root / "results" / f"L1_{pid:03d}.json").write_text(json.dumps(record))
    call = {
        "wall_s": wall_s,
        "ran": problems,
        "gpus": gpus,
        "problems_at_once": 2 * gpus,
        "fresh_caches": fresh,
    }
    (root / "sweep.json").write_text(json.dumps({"settings": {}, "calls": [call]}))
    return root


def test_efficiency_is_the_problem_rate_per_gpu_of_the_scaled_run_over_the_base(tmp_path: Path) -> None:
    one = _sweep(tmp_path / "one", gpus=1, wall_s=240.0, evaluations=12)
    two = _sweep(tmp_path / "two", gpus=2, wall_s=150.0, evaluations=12)
    result = compare(one, two)
    assert result["problems"] == 4
    assert result["base"].problems_per_minute == pytest.approx(1.0)
    assert result["scaled"].problems_per_minute == pytest.approx(1.6)
    assert result["efficiency"] == pytest.approx(0.8)
    assert result["scaled"].evaluations_per_gpu_minute == pytest.approx(48 / 5)
    assert "Scaling efficiency (problem rate per GPU, scaled / base): 80%" in markdown(result)
    assert main(["--base", str(one), "--scaled", str(two)]) == 0


def test_warm_caches_and_different_problems_are_refused(tmp_path: Path) -> None:
    one = _sweep(tmp_path / "one", gpus=1, wall_s=240.0, evaluations=12)
    warm = _sweep(tmp_path / "warm", gpus=2, wall_s=100.0, evaluations=12, fresh=False)
    with pytest.raises(ScalingError, match="warm caches"):
        compare(one, warm)
    assert compare(one, warm, allow_warm=True)["efficiency"] == pytest.approx(1.2)
    fewer = _sweep(tmp_path / "fewer", gpus=2, wall_s=100.0, evaluations=12, ran=3)
    with pytest.raises(ScalingError, match="different problems"):
        compare(one, fewer)
    assert main(["--base", str(one), "--scaled", str(fewer)]) == 2


def test_fresh_caches_point_every_cache_at_a_new_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in CACHE_VARIABLES:
        monkeypatch.setenv(variable, "/somewhere/warm")
    root = use_fresh_caches(tmp_path / "sweep")
    assert root.parent == tmp_path / "sweep" / "caches"
    for variable in CACHE_VARIABLES:
        folder = Path(os.environ[variable])
        assert folder.parent == root and folder.is_dir() and not any(folder.iterdir())
