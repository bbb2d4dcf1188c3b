"""Bad input is one clear line naming what is wrong and the valid choices, within seconds and before any
work starts: no traceback, no search, no run directory (where the mistake is in the command line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
"""


def _cli(
    args: list[str], cwd: Path, module: str = "kernelevolve", timeout: float = 120
) -> tuple[int, str, float]:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


def _one_error_line(output: str) -> str:
    assert "Traceback" not in output, output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    return errors[0]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["search.termination.max_evaluations=lots"], ["max_evaluations=lots", "Integer"]),
        (["search.bogus=1"], ["unknown setting search.bogus", "termination"]),
        (["bogus=1"], ["unknown setting bogus", "platform", "search"]),
        (["platform=tpu"], ["platform=tpu", "valid: a100", "l40s"]),
        (["platform.eval.timing_trials=-3"], ["timing_trials=-3", "integer >= 1"]),
        (["platform.eval.timeout_s=0"], ["timeout_s=0", "> 0"]),
        (["platform.eval.strict=false"], ["unknown setting platform.eval.strict", "timing_trials"]),
        (["search.policy=beam"], ["beam", "greedy, islands, mcts"]),
        (["search.operators=[tune,magic]"], ["magic", "template"]),
        (["search.scheduler=random"], ["random", "ucb"]),
        (["evaluator=ray", "evaluator.num_actors=many"], ["evaluator.num_actors", "Integer"]),
        (["evaluator.num_actors=2"], ["unknown setting evaluator.num_actors", "workers_per_device"]),
        (["kb.enabled=maybe"], ["kb.enabled", "auto, true, false"]),
        (["search.termination.wall_clock_s=-5"], ["wall_clock_s", ">= 0"]),
    ],
)
def test_a_bad_override_is_one_line_and_leaves_nothing(
    tmp_path: Path, overrides: list[str], expected: list[str]
) -> None:
    code, output, seconds = _cli(["+spec=softmax", "platform=cpu", *overrides], tmp_path)
    line = _one_error_line(output)
    assert code == 2 and seconds < 15, output
    assert all(part in line for part in expected), line
    assert list(tmp_path.iterdir()) == []  # no run directory, no outputs/


def test_no_spec_is_one_line(tmp_path: Path) -> None:
    code, output, _ = _cli(["platform=cpu"], tmp_path)
    assert code == 2 and "+spec=" in _one_error_line(output)


def test_a_malformed_spec_file_is_one_line_naming_each_field(tmp_path: Path) -> None:
    (tmp_path / "ref.py").write_text(REFERENCE)
    (tmp_path / "op.yaml").write_text("name: r\nreference: ref.py\natol: lots\nbackends: [cuda]\nshapez: 1\n")
    code, output, seconds = _cli(["+spec=op.yaml", "platform=cpu", "progress=false"], tmp_path)
    line = _one_error_line(output)
    assert code == 2 and seconds < 30, output
    assert "op.yaml: atol: must be a finite number >= 0, got 'lots'; " in line, line
    assert (
        "backends[0]: unknown backend 'cuda'; valid: triton, cute; shapez: unknown key; valid keys: " in line
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["op.yaml", "ref.py"]  # no run directory


def test_a_run_directory_that_holds_a_run_is_not_overwritten(tmp_path: Path) -> None:
    old = tmp_path / "runs" / "mine"
    old.mkdir(parents=True)
    (old / "graph.jsonl").write_text("")
    code, output, _ = _cli(["+spec=softmax", "run.name=mine"], tmp_path)
    assert code == 2 and "resume=runs/mine" in _one_error_line(output)
    assert sorted(p.name for p in old.iterdir()) == ["graph.jsonl"]  # Hydra wrote nothing into it


def test_verify_with_a_negative_trial_count_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "kernel.py").write_text("class ModelNew: pass\n")
    args = ["kernel.py", "+spec=softmax", "platform=cpu", "platform.eval.timing_trials=-3"]
    code, output, seconds = _cli(args, tmp_path, module="kernelevolve.verify")
    assert code == 2 and seconds < 30, output
    assert "timing_trials=-3: must be an integer >= 1" in _one_error_line(output)


def test_an_unknown_kernelbench_problem_names_the_valid_ids(tmp_path: Path) -> None:
    problems = tmp_path / "problems.jsonl"
    rows = [{"level": 1, "problem_id": i, "name": f"{i}_relu", "code": REFERENCE} for i in (1, 2, 3, 7)]
    problems.write_text("".join(json.dumps(row) + "\n" for row in rows))
    args = ["+spec=kernelbench:1/999", "platform=cpu", f"kernelbench.path={problems}", "progress=false"]
    code, output, seconds = _cli(args, tmp_path)
    line = _one_error_line(output)
    assert code == 2 and seconds < 30, output
    assert "no problem 999" in line and "valid ids at level 1: 1-3, 7" in line
    assert [p.name for p in tmp_path.iterdir()] == ["problems.jsonl"]  # no run directory


# ----------------------------------------------------------------------------- a malformed endpoint
class _Malformed(BaseHTTPRequestHandler):
    """Answers every request with HTTP 200 and a truncated JSON body."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self) -> None:
        self.server.requests += 1  # type: ignore[attr-defined]
        body = b'{"choices": [{"message": '
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._answer()


@pytest.fixture
def malformed_endpoint() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Malformed)
    server.requests = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_an_endpoint_answering_malformed_json_stops_the_run_in_one_line(
    tmp_path: Path, malformed_endpoint: ThreadingHTTPServer
) -> None:
    url = f"http://127.0.0.1:{malformed_endpoint.server_address[1]}/v1"
    args = ["+spec=softmax", "platform=cpu", "llm=vllm", f"llm.base_url={url}", "progress=false"]
    code, output, seconds = _cli(args, tmp_path)
    line = _one_error_line(output)
    assert code == 2 and seconds < 30, output
    assert url in line and "not JSON" in line and "OpenAI" in line
    assert malformed_endpoint.requests == 1  # type: ignore[attr-defined]


def test_a_malformed_completion_is_unavailable_at_once(malformed_endpoint: ThreadingHTTPServer) -> None:
    pytest.importorskip("openai")
    from kernelevolve.llm.client import LLMConfig, LLMUnavailable, OpenAICompatibleClient

    url = f"http://127.0.0.1:{malformed_endpoint.server_address[1]}/v1"
    client = OpenAICompatibleClient(LLMConfig(base_url=url, model="m", max_retries=3, api_key_env=""))
    with pytest.raises(LLMUnavailable, match="not an OpenAI chat completion"):
        client.complete([{"role": "user", "content": "hi"}])
    assert malformed_endpoint.requests == 1  # type: ignore[attr-defined]  # no retries of a bad answer
