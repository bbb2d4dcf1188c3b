"""The command line end to end on platform=cpu: a user's op.yaml, the run directory, kill and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from kernelevolve.export.store import ArtifactStore

REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 16
dim = 512


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""

SPEC = """name: my_softmax
reference: my_softmax_ref.py
tags: [softmax]
shapes:
  - {name: gpu, batch_size: 4096, dim: 4096}
cpu_shapes:
  - {name: small, batch_size: 6, dim: 100}
"""

FAST = [
    "platform.eval.measure_compile_baseline=false",
    "platform.eval.timing_trials=2",
    "platform.eval.correctness_trials=2",
    "progress=false",
    "kb.enabled=false",
]


def _cli(args: list[str], cwd: Path, **kwargs: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "KERNELEVOLVE_CACHE": str(cwd / "cache")}
    return subprocess.Popen(
        [sys.executable, "-m", "kernelevolve", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kwargs,  # type: ignore[arg-type]
    )


def _write_spec(folder: Path) -> None:
    (folder / "my_softmax_ref.py").write_text(REFERENCE)
    (folder / "op.yaml").write_text(SPEC)


def test_user_op_yaml_in_current_folder(tmp_path: Path) -> None:
    _write_spec(tmp_path)
    proc = _cli(["+spec=op.yaml", "platform=cpu", "search.termination.max_evaluations=4", *FAST], tmp_path)
    output, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, output
    run_dir = next((tmp_path / "runs").iterdir())
    results = json.loads((run_dir / "results.json").read_text())
    assert results["spec"]["name"] == "my_softmax" and results["spec"]["shapes"][0]["name"] == "small"
    assert results["evaluations"] == 4 and results["best"] is not None
    assert results["best_by_backend"]["triton"]["id"] == results["best"]["id"]  # only Triton runs on cpu
    # a strict run: its best uses our kernels only; on the CPU there is no GPU time to split
    assert results["strict"] is True and results["best"]["own_kernels_only"] is True
    assert results["best_strict"]["id"] == results["best"]["id"] and results["best"]["time_split"] is None
    assert {"load", "correctness", "timing"} <= set(results["time"]["evaluation_stages_s"])
    assert (run_dir / "best" / "kernel.py").read_text().count("class ModelNew") == 1
    assert "best " in output and "vs eager" in output  # the summary table
    namespace: dict[str, object] = {}
    exec((run_dir / "best" / "load.py").read_text(), namespace)  # the loader finds kernel.py beside it
    assert "load" in namespace
    # the run added its winner to the artifact store, where kernelevolve.lookup looks
    stored = ArtifactStore(tmp_path / "cache" / "artifacts.sqlite").find("my_softmax", "cpu")
    assert "small" in {a.shape for a in stored}


def test_platform_auto_resolves_before_hydra(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from kernelevolve.__main__ import _resolve_auto_platform

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    argv = ["kernelevolve", "+spec=softmax", "platform=auto"]
    assert _resolve_auto_platform(argv) is None and argv[-1] == "platform=cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "NVIDIA H200")
    argv = ["kernelevolve", "platform=auto"]
    assert _resolve_auto_platform(argv) is None and argv[-1] == "platform=h200"
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "Imaginary GPU 9000")
    error = _resolve_auto_platform(["kernelevolve", "platform=auto"])
    assert error is not None and "matches no platform" in error and "h200" in error


def test_bad_spec_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "op.yaml").write_text("name: x\nreference: nowhere.py\n")
    proc = _cli(["+spec=op.yaml", "platform=cpu"], tmp_path)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert "reference file not found" in output and "Traceback" not in output


def _reports(graph_file: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in graph_file.read_text().splitlines():
        if line.strip():
            event = json.loads(line)
            if event.get("type") == "report":
                counts[event["id"]] += 1
    return counts


def test_killed_run_resumes_without_reevaluating(tmp_path: Path) -> None:
    _write_spec(tmp_path)
    budget = ["search.termination.max_evaluations=7", "run.name=resumable", *FAST]
    proc = _cli(["+spec=op.yaml", "platform=cpu", *budget], tmp_path, start_new_session=True)
    graph_file = tmp_path / "runs" / "resumable" / "graph.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if graph_file.is_file() and sum(_reports(graph_file).values()) >= 2:
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its evaluation children, no clean-up
    proc.wait()
    before = _reports(graph_file)
    assert 2 <= sum(before.values()) < 7

    resumed = _cli([f"resume={graph_file.parent}", "platform=cpu", *budget], tmp_path)
    output, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, output
    after = _reports(graph_file)
    assert max(after.values()) == 1, "a candidate was evaluated twice"
    assert set(before) <= set(after) and sum(after.values()) == 7
    results = json.loads((graph_file.parent / "results.json").read_text())
    assert results["evaluations"] == 7 and results["evaluations_this_session"] == 7 - sum(before.values())
