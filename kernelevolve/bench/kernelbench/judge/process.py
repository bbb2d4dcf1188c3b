"""One kernel through KernelBench's evaluator, in a process of its own with a timeout.

The process (`child.py`) imports KernelBench, our candidate and whatever those import; a crash, a hang or
an import error there ends as a `judge_failed` verdict with a one-line reason, never as an exception here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import kernelevolve
from kernelevolve.bench.kernelbench.judge.checkout import kernelbench_commit, kernelbench_src
from kernelevolve.bench.kernelbench.judge.values import JudgeRequest, JudgeSettings, KernelBenchVerdict
from kernelevolve.results.format import first_line

CHILD_MODULE = "kernelevolve.bench.kernelbench.judge.child"
# this checkout's kernelevolve, whatever the environment has installed (the child runs in a temp folder)
_PACKAGE_ROOT = str(Path(kernelevolve.__file__).resolve().parents[1])
_OUTPUT_TAIL_BYTES = 8192


def judge_kernel(
    kernel_source: str,
    reference_source: str,
    settings: JudgeSettings,
    *,
    backend: str = "triton",
    device: str = "cuda:0",
    precision: str = "fp32",
    name: str = "reference",
) -> KernelBenchVerdict:
    """KernelBench's verdict and times for `kernel_source` (defines ModelNew) against `reference_source`
    (KernelBench's form: Model, get_inputs, get_init_inputs), judged on `device`."""
    start = time.monotonic()
    try:
        src = kernelbench_src(settings.path)
    except FileNotFoundError as exc:
        return KernelBenchVerdict.failed(str(exc), settings.path)
    commit = kernelbench_commit(src)
    request = JudgeRequest(
        kernelbench_src=str(src),
        reference_source=reference_source,
        kernel_source=kernel_source,
        backend=backend,
        precision=precision,
        device=device,
        name=name,
        correct_trials=settings.correct_trials,
        perf_trials=settings.perf_trials,
        timing_method=settings.timing_method,
        seed=settings.seed,
    )
    with tempfile.TemporaryDirectory(prefix="kernelevolve-kb-judge-") as tmp:
        outcome = _run_child(request, Path(tmp), settings.timeout_s)
    wall_s = time.monotonic() - start
    if isinstance(outcome, str):
        return KernelBenchVerdict.failed(outcome, str(src), commit, wall_s)
    try:
        verdict = KernelBenchVerdict.from_json(outcome)
    except (TypeError, ValueError) as exc:
        return KernelBenchVerdict.failed(
            f"unreadable verdict from the judge process: {exc}", str(src), commit, wall_s
        )
    return dataclasses.replace(verdict, kernelbench_path=str(src), kernelbench_commit=commit, wall_s=wall_s)


def _run_child(request: JudgeRequest, folder: Path, timeout_s: float) -> dict[str, object] | str:
    """The child's response, or why there is none."""
    request_path, response_path, log_path = (
        folder / "request.json",
        folder / "response.json",
        folder / "output.log",
    )
    request_path.write_text(json.dumps(request.to_json()))
    command = [sys.executable, "-m", CHILD_MODULE, str(request_path), str(response_path)]
    with open(log_path, "wb") as log:
        try:
            # a session of its own: on a timeout the whole group goes (compile workers, a candidate's children)
            child = subprocess.Popen(
                command,
                cwd=folder,
                env=_child_env(folder),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return f"cannot start the judge process: {exc}"
        try:
            code: int | None = child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _kill_group(child)  # on a timeout all of it; else what it left running once it answered
    if code is None:
        return f"timed out after {timeout_s:g} s"
    if response_path.is_file():
        try:
            response: dict[str, object] = json.loads(response_path.read_text())
        except (OSError, ValueError) as exc:
            return f"unreadable verdict from the judge process: {exc}"
        return response
    how = f"died of signal {_signal_name(-code)}" if code < 0 else f"exited with code {code}"
    last = _last_line(log_path)
    return f"the judge process {how} without a verdict" + (f": {last}" if last else "")


def _child_env(folder: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    # KernelBench runs Triton compiled: an interpreter setting inherited from a CPU test run is not its protocol
    env.pop("TRITON_INTERPRET", None)
    # litellm, where installed, fetches its model price list over the network at import unless told not to
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    env["TMPDIR"] = str(folder)  # its temp modules go with the folder, even after a crash
    return env


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    """The child, its group and every descendant (one that left the group with setsid too)."""
    from kernelevolve.eval.containment import kill_tree

    kill_tree(child.pid)
    child.wait()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _last_line(path: Path) -> str:
    """The last non-blank line the process wrote (a traceback's last line says what it was)."""
    with contextlib.suppress(OSError), open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - _OUTPUT_TAIL_BYTES))
        lines = [line for line in handle.read().decode(errors="replace").splitlines() if line.strip()]
        return first_line(lines[-1]) if lines else ""
    return ""
