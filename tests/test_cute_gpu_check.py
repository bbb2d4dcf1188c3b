"""experiments/cute_gpu_check.py without a GPU: every row in a child under a time limit, JSON after each row.

Fake children stand in for the measuring one: they save a (partial) row the way it does, then finish, hang
or die, and the parent must turn each into a row with a status and keep going.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "cute_gpu_check.py"
FAKE_CHILD = """
import json, os, subprocess, sys, time

row_file, mode = sys.argv[1], sys.argv[2]


def save(row):
    with open(row_file + ".tmp", "w") as f:
        json.dump(row, f)
    os.replace(row_file + ".tmp", row_file)


print("fake child", mode, flush=True)
if mode == "ok":
    save({"stage": "done", "status": "ok", "correct": True, "max_abs_error": 1e-7, "compile_s": 0.2,
          "cute_ms": 1.0, "eager_ms": 2.0, "compiled_ms": None, "speedup_vs_eager": 2.0, "speedup_vs_compile": None})
elif mode == "hang":
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    save({"stage": "correctness", "compile_s": 0.2, "worker_pid": worker.pid})
    print("[12:00:00] correctness", flush=True)
    time.sleep(600)
elif mode == "crash":
    save({"stage": "time_cute", "compile_s": 0.2, "correct": True})
    print("CUDA error: an illegal memory access was encountered", flush=True)
    os._exit(3)
"""


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cute_gpu_check", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


check = load_script()


def job(shape: str) -> Any:
    return check.Job(Path("fake.py"), "cute_fake", "fake", shape, "float32", {"n": 1})


def fake_command(job: Any, row_file: Path) -> list[str]:
    return [sys.executable, "-c", FAKE_CHILD, str(row_file), job.shape]


def gone(pid: int) -> bool:
    """Exited (a zombie waiting for a reaper counts as exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def test_rows_run_in_children_and_failures_become_rows(tmp_path: Path) -> None:
    out = tmp_path / "out" / "cute_gpu_check.json"
    seen: list[tuple[int, bool]] = []

    def command(job: Any, row_file: Path) -> list[str]:
        saved = json.loads(out.read_text())  # written before each row starts
        seen.append((len(saved["rows"]), "running" in saved))
        return fake_command(job, row_file)

    result: dict[str, Any] = {"complete": False}
    started = time.perf_counter()
    rows = check.run_jobs([job("ok"), job("hang"), job("crash")], command, out, result, 3.0, tail_lines=5)
    assert time.perf_counter() - started < 30

    assert seen == [(0, True), (1, True), (2, True)]
    saved = json.loads(out.read_text())
    assert "running" not in saved and saved["rows"] == rows
    assert [r["status"] for r in rows] == ["ok", "timeout", "crash"]
    assert all(r["template"] == "cute_fake" and r["params"] == {"n": 1} for r in rows)

    hung = rows[1]
    assert hung["stage"] == "correctness" and hung["compile_s"] == 0.2 and hung["timeout_s"] == 3.0
    assert hung["output_tail"][-1] == "[12:00:00] correctness"
    deadline = time.time() + 10
    while not gone(hung["worker_pid"]) and time.time() < deadline:
        time.sleep(0.1)
    assert gone(hung["worker_pid"]), "the hung child's own children outlive the timeout"

    crashed = rows[2]
    assert crashed["returncode"] == 3 and crashed["stage"] == "time_cute"
    assert "illegal memory access" in crashed["output_tail"][-1]

    text = check.table(rows)
    assert "timeout  correctness" in text and "crash    time_cute" in text and "2.00" in text


def test_a_spent_deadline_starts_no_child(tmp_path: Path) -> None:
    def never(job: Any, row_file: Path) -> list[str]:
        raise AssertionError("no child should start")

    rows = check.run_jobs([job("ok"), job("hang")], never, tmp_path / "r.json", {}, 3.0, deadline_s=0.0)
    assert [r["status"] for r in rows] == ["skipped", "skipped"]
    assert json.loads((tmp_path / "r.json").read_text())["rows"] == rows


def test_child_without_a_row_file_is_a_crash(tmp_path: Path) -> None:
    row = check.run_child([sys.executable, "-c", "raise SystemExit(0)"], tmp_path / "row.json", 10.0)
    assert row["status"] == "crash" and row["returncode"] == 0


def test_out_names_a_folder_or_the_file() -> None:
    assert check.out_path("/o") == Path("/o/cute_gpu_check.json")
    assert check.out_path("/o/x.json") == Path("/o/x.json")


def test_the_real_child_reports_a_missing_gpu_as_an_error_row(tmp_path: Path) -> None:
    pytest.importorskip("cutlass.cute")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: this checks the CPU path")
    template = SCRIPT.parents[1] / "kernelevolve" / "variation" / "templates" / "cute" / "softmax.py"
    args = check.argparse.Namespace(
        platform="h200", trials=1, warmup=0, input_sets=1, seed=0, no_compile=True
    )
    command = check.child_command(args)(
        check.Job(template, "s", "softmax", "b8192_d4096", "float32", {}), tmp_path / "r.json"
    )
    row = check.run_child(command, tmp_path / "r.json", 120.0)
    assert row["status"] == "error" and "no CUDA device" in row["error"], row
