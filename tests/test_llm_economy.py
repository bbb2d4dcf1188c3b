"""What the LLM operator spends per evaluated candidate, on a whole search with the real harness.

The endpoint is the loopback server replaying a mix of realistic replies (tests/llm_replay.py: good
kernels, broken code, a repeat, prose, a reply cut off at the token limit); the same prompt always gets
the same reply, as with a recording. Target (issue 38): at most 1.5 LLM calls per evaluated candidate,
and every reply that gave no new kernel counted and logged. experiments/llm_economy/ records the number.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.hydra_config import FAST_RUN, compose_run_config
from tests.llm_replay import MAX_TOKENS, MIX, ReplayModel
from tests.llm_server import REFERENCE, LoopbackLLMServer

pytest.importorskip("openai")
pytestmark = pytest.mark.slow

EVALUATIONS = 16
TARGET_CALLS_PER_EVALUATION = 1.5


def economy_run(tmp_path: Path, evaluations: int = EVALUATIONS, mix: tuple[str, ...] = MIX) -> dict[str, Any]:
    """An LLM-only search of `evaluations` on the CPU platform against a replayed `mix`; its numbers."""
    from kernelevolve.app import run_search

    body = "\n".join("  " + line for line in REFERENCE.splitlines())
    spec_file = tmp_path / "scaled_relu.yaml"
    spec_file.write_text(f"name: scaled_relu\nreference_code: |\n{body}\n")
    model = ReplayModel(mix)
    with LoopbackLLMServer(model) as server:
        cfg = compose_run_config(
            [
                f"+spec={spec_file}",
                "platform=cpu",
                "llm=vllm",
                f"llm.base_url={server.base_url}",
                "llm.model=replay",
                f"llm.max_tokens={MAX_TOKENS}",
                "llm.max_retries=0",
                "search.operators=[]",
                f"search.termination.max_evaluations={evaluations}",
                "search.termination.wall_clock_s=600",
                *FAST_RUN,
                f"run.root={tmp_path / 'runs'}",
            ]
        )
        result = run_search(cfg)
    llm = result.results["operators"]["llm"]
    return {
        "results": result.results,
        "requests": len(server.requests),
        "reply_kinds": list(model.kinds),  # what the model sent, per distinct prompt
        "evaluations": result.results["evaluations"],
        "calls": llm["accounting"]["calls"],
        "calls_per_evaluation": llm["per_evaluation"]["calls"],
        "tokens_per_evaluation": llm["per_evaluation"]["tokens"],
        "stop_reason": result.results["stop_reason"],
    }


def test_calls_per_evaluated_candidate_on_a_replayed_mix(tmp_path: Path, caplog: Any) -> None:
    with caplog.at_level(logging.INFO):
        run = economy_run(tmp_path)
    results, kinds = run["results"], run["reply_kinds"]
    llm = results["operators"]["llm"]
    assert run["evaluations"] == EVALUATIONS, results["stop_reason"]
    assert run["calls"] == run["requests"]  # every request the server saw is accounted for
    assert run["calls_per_evaluation"] <= TARGET_CALLS_PER_EVALUATION, run
    # Every reply that gave no new kernel is counted by kind...
    replies = llm["accounting"]["replies_by_kind"]
    assert replies.get("no_code", 0) == kinds.count("prose")
    assert replies.get("duplicate", 0) == kinds.count("repeat")
    assert replies.get("new", 0) == sum(kinds.count(k) for k in ("good", "broken", "wrong", "long"))
    # ...each long reply cost a second request with room to finish, and none stayed truncated.
    assert llm["accounting"]["truncated"] == kinds.count("long") and "truncated" not in replies
    # ...and each kind is logged once.
    messages = [r.getMessage() for r in caplog.records]
    for kind in ("no_code", "duplicate"):
        assert sum(f"LLM reply gave no new kernel ({kind}:" in m for m in messages) == 1, kind
    # The run's summary shows the endpoint's health.
    from kernelevolve.results.outputs import summary_table

    table = summary_table(results)
    assert "llm endpoint replay at http://127.0.0.1:" in table and "calls per evaluation" in table
    assert "replies without a new kernel duplicate" in table
