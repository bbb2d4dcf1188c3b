"""A built wheel is a working install: in a fresh virtual environment, outside the repository, the
`kernelevolve` console script finds its shipped data (conf/, operators/, platforms/, knowledge_base/)
through importlib.resources and writes its run where hydra.run.dir says.

Fast and offline: the wheel is built without build isolation, the environment is made without pip, and
it reuses this environment's packages (torch, triton, hydra...) through a .pth file, which does not run
the editable install's finder, so `import kernelevolve` is the wheel's. About a minute on 2 cores.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.slow, pytest.mark.packaging]

RUN = [
    "+spec=softmax",
    "platform=cpu",
    "search.operators=[template,tune]",
    "search.termination.max_evaluations=2",
    "platform.eval.correctness_trials=2",
    "platform.eval.timing_trials=2",
    "platform.eval.measure_compile_baseline=false",
    "kb.enabled=false",
    "kb.record_past_wins=false",
]


def _run(args: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"{args}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def test_the_wheel_runs_outside_the_repository(tmp_path: Path) -> None:
    start = time.monotonic()
    wheels, venv, work = tmp_path / "wheels", tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(REPO),
        ],
        REPO,
        180,
    )
    (wheel,) = wheels.glob("kernelevolve-*.whl")
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], work, 60)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        work,
        120,
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KERNELEVOLVE_HOME")}
    where = _run(
        [str(python), "-c", "import kernelevolve.paths as p; print(p.__file__, p.CONF_DIR)"], work, 60, env
    )
    assert str(REPO) not in where and "_shipped" in where, where  # the wheel's package and its data

    run_dir = tmp_path / "elsewhere" / "my-run"
    output = _run([str(venv / "bin" / "kernelevolve"), *RUN, f"hydra.run.dir={run_dir}"], work, 240, env)
    assert "verified:" in output and f"run directory: {run_dir}" in output
    assert (run_dir / "results.json").is_file() and (run_dir / "best" / "kernel.py").is_file()
    assert "search.termination.max_evaluations=2" in (run_dir / ".hydra" / "overrides.yaml").read_text()
    assert "run directory" in (run_dir / "kernelevolve.log").read_text()
    assert sorted(p.name for p in work.iterdir()) == []  # nothing in the current folder: no runs/, outputs/
    assert time.monotonic() - start < 120  # CI budget: under two minutes
