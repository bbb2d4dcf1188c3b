"""An LLM search stopped and resumed spends what an uninterrupted one spends, and says so.

The endpoint is the loopback server replaying a mix of recorded replies (tests/llm_replay.py); the
evaluator reports made-up verdicts and times at once (tests/instant_engine.py), so both runs take the
same decisions and the comparison is exact. Also here: the scheduler rests an operator whose replies
give nothing, instead of asking it again at once.
"""

from __future__ import annotations

import json
import logging
import re
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.platforms import load_platform
from kernelevolve.search.engine import Engine, EngineSettings, SearchOutcome
from kernelevolve.search.graph import SearchGraph
from kernelevolve.search.selection import build_selection
from kernelevolve.search.termination import build_termination
from kernelevolve.types import Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec, ShapeCase, Status
from kernelevolve.variation.llm_operator import LLMOperator
from kernelevolve.variation.scheduler import OperatorScheduler
from tests.instant_engine import InstantEvaluator
from tests.llm_replay import MAX_TOKENS, ReplayModel
from tests.llm_server import REFERENCE, LoopbackLLMServer

pytest.importorskip("openai")

SPEC = KernelSpec(name="scaled_relu", reference_source=REFERENCE, shapes=(ShapeCase("default"),))


class ReplayEvaluator(InstantEvaluator):
    """Verdicts from the replayed kernels: the broken one fails to run, the wrong one is incorrect,
    the others are correct, faster with larger blocks."""

    def measure(self, candidate: Candidate) -> tuple[float, float]:
        block = int(re.search(r"BLOCK=(\d+)", candidate.source).group(1))  # type: ignore[union-attr]
        return 1.0 / (1.0 + block.bit_length() / 8), 0.01

    def submit(self, request: EvalRequest) -> Future[EvalReport]:
        source = request.candidate.source
        status = (
            Status.RUNTIME_ERROR if "x_missing" in source else Status.INCORRECT if "+ 1.0" in source else None
        )
        if status is None:
            return super().submit(request)
        future: Future[EvalReport] = Future()
        future.set_result(
            EvalReport(request.candidate.id, status, feedback="NameError: x_missing", wall_s=0.01)
        )
        return future


def _operator(server: LoopbackLLMServer, run_dir: Path) -> LLMOperator:
    config = {"base_url": server.base_url, "model": "replay", "api_key_env": "", "max_tokens": MAX_TOKENS}
    return LLMOperator(config=config, kb_config={"enabled": False}, run_dir=run_dir)


def _run(server: LoopbackLLMServer, run_dir: Path, evaluations: int) -> tuple[SearchOutcome, LLMOperator]:
    checkpoint = run_dir / "graph.jsonl"
    graph = SearchGraph.load(checkpoint) if checkpoint.exists() else SearchGraph(checkpoint)
    operator = _operator(server, run_dir)
    engine = Engine(
        spec=SPEC,
        platform=load_platform("cpu"),
        graph=graph,
        evaluator=ReplayEvaluator(SPEC),
        operators=[operator],
        policy=build_selection("greedy"),
        scheduler=OperatorScheduler(strategy="ucb"),
        termination=build_termination({"max_evaluations": evaluations}),
        eval_settings=EvalSettings(),
        backends=("triton",),
        settings=EngineSettings(seed=3, proposal_concurrency=1, progress=False),
    )
    return engine.run(), operator


def _prompts(server: LoopbackLLMServer, start: int = 0) -> list[str]:
    return [json.dumps(r["messages"], sort_keys=True) for r in server.requests[start:]]


def test_a_resumed_run_spends_and_reports_what_an_uninterrupted_one_does(tmp_path: Path) -> None:
    with LoopbackLLMServer(ReplayModel()) as server:
        whole, whole_op = _run(server, tmp_path / "whole", 12)
        whole_prompts = _prompts(server)
    with LoopbackLLMServer(ReplayModel()) as server:
        _run(server, tmp_path / "split", 6)
        first_session = len(server.requests)
        split, split_op = _run(server, tmp_path / "split", 12)
        # The resumed session sends no prompt the first one sent: those replies are in the cache.
        assert not set(_prompts(server, first_session)) & set(_prompts(server)[:first_session])
        split_prompts = _prompts(server)
    assert split_prompts == whole_prompts
    a, b = whole_op.report()["accounting"], split_op.report()["accounting"]
    keys = ("calls", "prompt_tokens", "completion_tokens", "replies_by_kind")
    assert {k: a[k] for k in keys} == {k: b[k] for k in keys}
    assert b["sessions"] == 2 and 0 < b["this_session"]["calls"] < b["calls"] == len(split_prompts)
    assert b["prompt_tokens"] == sum(len(m["content"].split()) for p in split_prompts for m in json.loads(p))
    whole_graph = SearchGraph.load(tmp_path / "whole" / "graph.jsonl")
    split_graph = SearchGraph.load(tmp_path / "split" / "graph.jsonl")
    assert [n.id for n in whole_graph.nodes()] == [n.id for n in split_graph.nodes()]
    assert whole.best is not None and split.best is not None and whole.best.id == split.best.id


def test_an_operator_whose_replies_give_nothing_is_rested(tmp_path: Path, caplog: Any) -> None:
    prose = LoopbackLLMServer(lambda body: "Use a bigger block and fuse the operations.")
    with prose as server, caplog.at_level(logging.INFO):
        outcome, operator = _run(server, tmp_path / "prose", 10)
    # Three replies in prose: said once, the operator rested, and with nothing else to run the search
    # ends instead of asking 25 more times.
    assert len(server.requests) == 3
    assert outcome.stop_reason == (
        "no operator can propose anything new (llm rests: its last 3 replies gave no new kernel (no code x3))"
    )
    messages = [r.getMessage() for r in caplog.records]
    assert any("operator llm rests for 1 evaluation(s)" in m for m in messages)
    assert sum("answered its first 3 replies in prose" in m for m in messages) == 1
    assert operator.report()["replies"]["prose_only"]
