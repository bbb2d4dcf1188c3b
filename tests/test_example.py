"""The transformer-block example end to end on the CPU: optimise RMSNorm and SwiGLU, swap the winners
in (custom ops, then ModelNew modules), and check the model's output still matches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "transformer_block" / "optimize_and_swap.py"


def _run_example(tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "summary.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # the script sets it itself
    env["KERNELEVOLVE_CACHE"] = str(tmp_path / "cache")
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--budget",
            "2",
            "--trials",
            "2",
            "--run-root",
            str(tmp_path / "runs"),
            "--json",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,  # the script finds the package and the example without the repository as cwd
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "output matches the original model: True" in done.stdout
    summary: dict = json.loads(out.read_text())
    return summary


def test_example_swaps_custom_ops_in(tmp_path: Path) -> None:
    summary = _run_example(tmp_path)
    assert summary["matches"] and summary["max_abs_diff"] < 1e-4
    assert summary["eager_ms"] > 0 and summary["swapped_ms"] > 0
    for name, shape in (("RMSNorm", "6x64"), ("SwiGLU", "6x96")):
        entry = summary["ops"][name]
        assert entry["best"] and entry["swapped"] >= 1
        # Every call of the timed and checked forward passes hit the searched shape's kernel.
        assert (
            set(entry["paths"]) == {f"kernel:{shape}"}
            and entry["paths"][f"kernel:{shape}"] >= entry["swapped"]
        )
    assert summary["ops"]["RMSNorm"]["swapped"] == 3  # two blocks + the final norm
    runs = sorted(p.name.split("-")[0] for p in (tmp_path / "runs").iterdir() if not p.name.startswith("_"))
    assert runs == ["rmsnorm", "swiglu"]


def test_example_swaps_modules_in(tmp_path: Path) -> None:
    summary = _run_example(tmp_path, "--swap", "module")
    assert summary["matches"] and summary["swap"] == "module"
    assert summary["ops"]["RMSNorm"]["swapped"] == 3 and summary["ops"]["SwiGLU"]["swapped"] == 2
    assert "paths" not in summary["ops"]["RMSNorm"]  # ModelNew modules, no custom op
