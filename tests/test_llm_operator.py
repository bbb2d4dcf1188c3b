"""The universal LLM operator in every mode, against the loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import logging
import random
import threading
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.llm.cache import ResponseCache
from kernelevolve.llm.client import LLMConfig, OpenAICompatibleClient
from kernelevolve.platforms import load_platform
from kernelevolve.search.fitness import score
from kernelevolve.search.graph import SearchGraph
from kernelevolve.search.interfaces import Operator, ProposalContext
from kernelevolve.types import Baseline, Candidate, EvalReport, KernelSpec, ShapeCase, Status, TimingStats
from kernelevolve.variation.llm_operator import LLMOperator

try:
    from llm_server import KERNEL, REFERENCE, LoopbackLLMServer, fenced
except ImportError:  # tests/ imported as a package
    from tests.llm_server import KERNEL, REFERENCE, LoopbackLLMServer, fenced

pytest.importorskip("openai")

SPEC = KernelSpec(
    name="scaled_relu", reference_source=REFERENCE, shapes=(ShapeCase("default"),), tags=("elementwise",)
)
H100 = load_platform("h100")


def _t(ms: float) -> TimingStats:
    return TimingStats(ms, ms, 0.0, ms, ms, 10, "cuda_event")


BASELINES = {"default": Baseline(_t(0.1), _t(0.08))}


def _task(body: dict[str, Any]) -> str:
    user = body["messages"][-1]["content"]
    return user.split("\n", 1)[0]


def by_mode(body: dict[str, Any]) -> str:
    """Answer every prompt with the kernel, marked with the task line so children differ (in code: a
    comment alone would make the same kernel)."""
    return fenced(f"ANSWER_TO = {_task(body)!r}\n{KERNEL}")


def _config(server: LoopbackLLMServer, **overrides: Any) -> LLMConfig:
    values: dict[str, Any] = {
        "base_url": server.base_url,
        "model": "loopback",
        "api_key_env": "",
        "max_retries": 1,
        "timeout_s": 5.0,
    }
    values.update(overrides)
    return LLMConfig(**values)


def _operator(server: LoopbackLLMServer, **options: Any) -> LLMOperator:
    cache = options.pop("cache", None)
    options.setdefault("kb_config", {"enabled": False})  # the real KB has its own (marked) test
    client = OpenAICompatibleClient(_config(server), cache=cache)
    return LLMOperator(client=client, **options)


def _add(graph: SearchGraph, source: str, status: Status = Status.OK, ms: float = 0.05, **report: Any) -> str:
    candidate = Candidate(source=source, backend="triton", operator="seed")
    graph.add_candidate(candidate)
    latency = {"default": _t(ms)} if status is Status.OK else {}
    result = EvalReport(candidate.id, status, latency=latency, baselines=BASELINES, **report)
    graph.record(candidate.id, result, score(result, BASELINES))
    return candidate.id


def _ctx(
    graph: SearchGraph, parents: tuple[str, ...], backends: tuple[str, ...] = ("triton",)
) -> ProposalContext:
    return ProposalContext(SPEC, H100, graph, parents, random.Random(1), backends, budget_hint=1)


@pytest.fixture
def server():
    with LoopbackLLMServer(by_mode) as srv:
        yield srv


def test_is_an_operator() -> None:
    op = LLMOperator(client=OpenAICompatibleClient(LLMConfig(api_key_env="")), kb_config={"enabled": False})
    assert isinstance(op, Operator) and op.name == "llm" and op.arities == (0, 1, 2)


def test_generate_from_the_spec(server: LoopbackLLMServer) -> None:
    op = _operator(server)
    [child] = op.propose(_ctx(SearchGraph(), ()))
    assert (child.operator, child.mode, child.parent_ids, child.backend) == ("llm", "generate", (), "triton")
    assert "ANSWER_TO = 'Task: write a first Triton implementation" in child.source
    meta = child.metadata
    assert meta["model"] == "loopback" and len(meta["prompt_id"]) == 16 and meta["retrieved"] == []
    assert meta["tokens"]["prompt"] > 100 and meta["tokens"]["completion"] > 10 and meta["cached"] is False
    assert "llm_cost_s" in meta and meta["parse"] == "fenced"
    json.dumps(child.to_json())  # metadata must be JSON-able for the graph checkpoint


def test_repair_a_failing_parent(server: LoopbackLLMServer) -> None:
    graph = SearchGraph()
    feedback = "Traceback (most recent call last):\nIndexError: pointer out of bounds at offs 1024"
    pid = _add(
        graph,
        KERNEL.replace("mask=mask", "mask=None"),
        Status.RUNTIME_ERROR,
        error_name="IndexError",
        feedback=feedback,
    )
    [child] = _operator(server).propose(_ctx(graph, (pid,)))
    assert (child.mode, child.parent_ids) == ("repair", (pid,))
    user = server.requests[-1]["messages"][-1]["content"]
    assert "IndexError: pointer out of bounds at offs 1024" in user and "Status: runtime_error" in user
    assert child.metadata["diagnosis"].startswith("runtime error: IndexError: pointer out of bounds")


def test_improve_a_working_parent(server: LoopbackLLMServer) -> None:
    graph = SearchGraph()
    pid = _add(graph, KERNEL)
    op = _operator(server, p_combine=0.0, p_translate=0.0, p_tune=0.0)
    [child] = op.propose(_ctx(graph, (pid,)))
    assert (child.mode, child.parent_ids) == ("improve", (pid,))
    user = server.requests[-1]["messages"][-1]["content"]
    assert "| default | 0.05 | 0.1 | 0.08 | 2.00x | 1.60x |" in user
    assert "memory-bound" in child.metadata["diagnosis"]  # bytes estimated on the meta device


def test_combine_two_working_parents_best_first(server: LoopbackLLMServer) -> None:
    graph = SearchGraph()
    slow = _add(graph, KERNEL.replace("1024", "256"), ms=0.08)
    fast = _add(graph, KERNEL, ms=0.04)
    [child] = _operator(server).propose(_ctx(graph, (slow, fast)))
    assert (child.mode, child.parent_ids) == ("combine", (fast, slow))
    assert "Task: combine two working Triton kernels" in child.source


def test_one_parent_may_be_combined_with_another_good_node(server: LoopbackLLMServer) -> None:
    graph = SearchGraph()
    other = _add(graph, KERNEL.replace("1024", "256"), ms=0.08)
    pid = _add(graph, KERNEL, ms=0.04)
    [child] = _operator(server, p_combine=1.0, p_translate=0.0, p_tune=0.0).propose(_ctx(graph, (pid,)))
    assert (child.mode, child.parent_ids) == ("combine", (pid, other))


def test_translate_to_a_backend_the_parent_lacks(server: LoopbackLLMServer) -> None:
    graph = SearchGraph()
    pid = _add(graph, KERNEL)
    op = _operator(server, p_combine=0.0, p_translate=1.0, p_tune=0.0)
    [child] = op.propose(_ctx(graph, (pid,), backends=("triton", "cute")))
    assert (child.mode, child.backend, child.parent_ids) == ("translate", "cute", (pid,))
    assert "translate this working Triton kernel into CuTe DSL" in child.source
    # With only the parent's own backend runnable there is nothing to translate to: improve instead.
    [again] = op.propose(_ctx(graph, (pid,), backends=("triton",)))
    assert again.mode == "improve" and again.backend == "triton"


def test_tune_a_working_parent(server: LoopbackLLMServer) -> None:
    graph = SearchGraph()
    pid = _add(graph, KERNEL)
    [child] = _operator(server, p_combine=0.0, p_translate=0.0, p_tune=1.0).propose(_ctx(graph, (pid,)))
    assert (child.mode, child.parent_ids) == ("tune", (pid,))


def test_search_replace_reply_edits_the_parent() -> None:
    edit = (
        "<<<<<<< SEARCH\n    mask = offs < n\n=======\n    mask = (offs < n) & (offs >= 0)\n>>>>>>> REPLACE\n"
    )
    with LoopbackLLMServer([f"Small fix.\n{edit}"]) as srv:
        graph = SearchGraph()
        pid = _add(graph, KERNEL, Status.INCORRECT, max_abs_error=2.0)
        [child] = _operator(srv).propose(_ctx(graph, (pid,)))
    assert child.mode == "repair" and child.metadata["parse"] == "edits"
    assert child.source == KERNEL.replace("mask = offs < n", "mask = (offs < n) & (offs >= 0)")
    assert child.metadata["idea"] == "Small fix."


def test_garbage_and_unchanged_replies_are_recorded_failures() -> None:
    with LoopbackLLMServer(["I am not sure what you mean.", fenced(KERNEL)]) as srv:
        graph = SearchGraph()
        pid = _add(graph, KERNEL)
        op = _operator(srv, p_combine=0.0, p_translate=0.0, p_tune=0.0)
        assert op.propose(_ctx(graph, (pid,))) == []
        assert op.propose(_ctx(graph, (pid,))) == []  # the reply is the parent itself
    kinds = [(f["kind"], f["mode"], f["parent_ids"]) for f in op.failures]
    assert kinds == [("no_code", "improve", [pid]), ("unchanged", "improve", [pid])]
    assert "no code block" in op.failures[0]["reason"]
    report = op.report()
    assert report["failure_counts"] == {"no_code": 1, "unchanged": 1} and report["accounting"]["calls"] == 2
    assert report["accounting"]["replies_by_kind"] == {"no_code": 1, "unchanged": 1}
    assert report["replies"] == {
        "replies": 2,
        "new_kernels": 0,
        "unusable": 1,
        "repeats": 1,
        "prose_only": False,
    }
    # Both replies are in the graph: the second prompt already told the model about the first.
    events = [e["payload"]["kind"] for e in graph.events("llm_attempt")]
    assert events == ["no_code", "unchanged"]
    assert (
        "- a reply (improve of this parent): a reply without code."
        in srv.requests[1]["messages"][-1]["content"]
    )
    json.dumps(report)


def test_reply_equal_to_another_node_is_a_duplicate() -> None:
    other = KERNEL.replace("1024", "512")
    with LoopbackLLMServer([fenced(other)]) as srv:
        graph = SearchGraph()
        pid = _add(graph, KERNEL)
        existing = _add(graph, other, ms=0.2)
        op = _operator(srv, p_combine=0.0, p_translate=0.0, p_tune=0.0)
        assert op.propose(_ctx(graph, (pid,))) == []
    assert op.failures[0]["kind"] == "duplicate" and existing in op.failures[0]["reason"]


def test_a_repeat_is_named_in_the_next_prompt_and_no_prompt_is_sent_twice() -> None:
    other = KERNEL.replace("1024", "512")
    # Reformatted and re-commented: the same kernel.
    same = other.replace("    mask = offs < n", "    # bounds\n    mask = (offs < n)")
    replies = [fenced(same), fenced(KERNEL.replace("1024", "2048")), fenced(KERNEL.replace("1024", "64"))]
    with LoopbackLLMServer(replies) as srv:
        graph = SearchGraph()
        pid = _add(graph, KERNEL)
        existing = _add(graph, other, ms=0.2)
        op = _operator(srv, p_combine=0.0, p_translate=0.0, p_tune=0.0)
        assert op.propose(_ctx(graph, (pid,))) == []
        [child] = op.propose(_ctx(graph, (pid,)))
        second = srv.requests[1]["messages"][-1]["content"]
        assert (
            f"- a reply (improve of this parent): repeated {existing} (same code); not evaluated again"
            in second
        )
        assert srv.requests[0]["messages"] != srv.requests[1]["messages"]
        # The graph has not changed since the last prompt was answered... except by the new child,
        # which the engine adds; without it the prompt would be the same, and it is not sent again.
        assert op.propose(_ctx(graph, (pid,))) == [] and len(srv.requests) == 2
        assert op.failure_counts["repeat_prompt"] == 1
        graph.add_candidate(child)
        op.propose(_ctx(graph, (pid,)))
        assert len(srv.requests) == 3  # the new node changed the prompt ("being evaluated")
        assert (
            f"- {child.id} (improve of this parent): being evaluated"
            in srv.requests[2]["messages"][-1]["content"]
        )


def test_each_unusable_kind_is_logged_once_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    replies = ["I'm sorry, I can't help with that.", "Here is my plan, in words only."] * 2
    with LoopbackLLMServer(replies + [fenced(KERNEL)]) as srv:
        op = _operator(srv, rest_after=10)
        graph = SearchGraph()
        with caplog.at_level(logging.INFO, logger="kernelevolve.llm.health"):
            for _ in range(5):
                for child in op.propose(_ctx(graph, ())):
                    graph.add_candidate(child)
    assert op.failure_counts == {"refusal": 2, "no_code": 2}
    logged = [r.getMessage() for r in caplog.records]
    assert sum("(refusal:" in m for m in logged) == 1 and sum("(no_code:" in m for m in logged) == 1
    # The first three replies were prose: the endpoint is reported as answering in prose.
    prose = [r for r in caplog.records if "answered its first 3 replies in prose" in r.getMessage()]
    assert len(prose) == 1 and prose[0].levelno == logging.ERROR and op.report()["replies"]["prose_only"]
    assert len(graph) == 1 and op.report()["replies"]["new_kernels"] == 1


def test_a_prose_only_endpoint_is_rested_after_three_replies(caplog: pytest.LogCaptureFixture) -> None:
    with LoopbackLLMServer(lambda body: "Sure! First, think about memory coalescing.") as srv:
        op = _operator(srv)
        graph = SearchGraph()
        with caplog.at_level(logging.ERROR, logger="kernelevolve.llm.health"):
            for _ in range(3):
                assert op.propose(_ctx(graph, ())) == []
                if len(srv.requests) < 3:
                    assert op.rest_reason() is None
    assert len(srv.requests) == 3 and any("in prose" in r.getMessage() for r in caplog.records)
    assert op.rest_reason() == "its last 3 replies gave no new kernel (no code x3)"


def test_a_reply_cut_off_at_the_token_limit_is_asked_again_with_room() -> None:
    long_reply = "Here is a long explanation. " + "words " * 150 + fenced(KERNEL.replace("1024", "512"))
    with LoopbackLLMServer(lambda body: long_reply) as srv:
        client = OpenAICompatibleClient(_config(srv, max_tokens=200))
        op = LLMOperator(client=client, kb_config={"enabled": False})
        [child] = op.propose(_ctx(SearchGraph(), ()))
        assert [r["max_tokens"] for r in srv.requests] == [200, 400] and child.metadata["requests"] == 2
        flagged = LLMOperator(
            client=OpenAICompatibleClient(_config(srv, max_tokens=200, retry_truncated=False)),
            kb_config={"enabled": False},
        )
        assert flagged.propose(_ctx(SearchGraph(), ())) == []
    assert flagged.failure_counts == {"truncated": 1}
    assert flagged.report()["accounting"]["truncated"] == 1


def test_the_run_budget_stops_calls_and_asks_for_a_rest(caplog: pytest.LogCaptureFixture) -> None:
    blocks = iter(range(16, 4096, 16))
    with LoopbackLLMServer(lambda body: fenced(KERNEL.replace("1024", str(next(blocks))))) as srv:
        op = _operator(srv, budget={"calls": 2})
        graph = SearchGraph()
        with caplog.at_level(logging.WARNING, logger="kernelevolve.variation.llm_operator"):
            for _ in range(4):
                for child in op.propose(_ctx(graph, ())):
                    graph.add_candidate(child)
    assert len(srv.requests) == 2 and len(graph) == 2
    assert op.rest_reason() == "the run's LLM budget is spent (calls: 2 of 2)"
    assert op.failure_counts["budget"] == 2
    assert sum("budget is spent" in r.getMessage() for r in caplog.records) == 1
    with pytest.raises(ValueError, match="unknown llm.budget keys \\['call'\\]"):
        LLMOperator(config={"budget": {"call": 3}}, kb_config={"enabled": False})


def test_accounting_and_samples_carry_over_a_resume(tmp_path: Path) -> None:
    graph_path = tmp_path / "graph.jsonl"
    with LoopbackLLMServer(by_mode) as srv:
        config = {"base_url": srv.base_url, "model": "m", "api_key_env": ""}
        first = LLMOperator(config=config, kb_config={"enabled": False}, run_dir=tmp_path)
        graph = SearchGraph(graph_path)
        [child] = first.propose(_ctx(graph, ()))
        # Killed before the engine recorded the child: a resumed run rebuilds the same prompt, and its
        # reply comes from the cache, not the server.
        resumed = LLMOperator(config=config, kb_config={"enabled": False}, run_dir=tmp_path)
        graph = SearchGraph.load(graph_path)
        [again] = resumed.propose(_ctx(graph, ()))
        assert again.id == child.id and again.metadata["cached"] and len(srv.requests) == 1
        graph.add_candidate(again)
        # Resumed again, with the child recorded: the prompt of sample 0 was answered, so the same
        # prompt is not sent; the graph's new node makes the next prompt a new one anyway.
        third = LLMOperator(config=config, kb_config={"enabled": False}, run_dir=tmp_path)
        graph = SearchGraph.load(graph_path)
        third.propose(_ctx(graph, ()))
        assert len(srv.requests) == 2
    data = third.report()["accounting"]
    assert data["calls"] == 2 and data["sessions"] == 3 and data["this_session"]["calls"] == 1
    assert data["cached_hits"] == 1 and data["prompt_tokens"] == sum(
        sum(len(m["content"].split()) for m in r["messages"]) for r in srv.requests
    )


def test_unavailable_endpoint_is_recorded_logged_once_then_paused(caplog: pytest.LogCaptureFixture) -> None:
    with LoopbackLLMServer(by_mode) as srv:
        config = _config(srv, max_retries=0)
    # The server is stopped: its port now refuses connections.
    client = OpenAICompatibleClient(config)
    op = LLMOperator(client=client, kb_config={"enabled": False}, max_consecutive_unavailable=2, pause_s=60.0)
    graph = SearchGraph()
    with caplog.at_level(logging.WARNING, logger="kernelevolve.variation.llm_operator"):
        for _ in range(3):
            assert op.propose(_ctx(graph, ())) == []
    unavailable = [f for f in op.failures if f["kind"] == "unavailable"]
    assert len(unavailable) == 2 and "connection failed" in unavailable[0]["reason"]
    assert unavailable[0]["mode"] == "generate" and unavailable[0]["parent_ids"] == []
    warnings = [r.getMessage() for r in caplog.records]
    assert sum("LLM endpoint unavailable" in m for m in warnings) == 1
    assert sum("paused" in m for m in warnings) == 1
    assert op.failure_counts["paused"] == 1  # the third call did not even try
    assert op.accounting.totals().failures == 2


def test_sampling_a_prompt_again_is_allowed_when_configured_and_a_resume_replays_the_cache(
    tmp_path: Path,
) -> None:
    replies = iter(range(100))
    lock = threading.Lock()

    def numbered(body: dict[str, Any]) -> str:
        with lock:
            return fenced(f"# sample {next(replies)}\n{KERNEL}")

    with LoopbackLLMServer(numbered) as srv:
        op = _operator(srv, cache=ResponseCache(tmp_path), samples_per_prompt=2)
        first = op.propose(_ctx(SearchGraph(), ()))[0]
        second = op.propose(_ctx(SearchGraph(), ()))[0]
        assert first.id != second.id and len(srv.requests) == 2
        assert (first.metadata["sample"], second.metadata["sample"]) == (0, 1)
        assert op.propose(_ctx(SearchGraph(), ())) == [] and len(srv.requests) == 2  # two samples allowed
        resumed = _operator(srv, cache=ResponseCache(tmp_path))
        again = resumed.propose(_ctx(SearchGraph(), ()))[0]
        assert again.id == first.id and again.metadata["cached"] and len(srv.requests) == 2


def test_retrieved_documents_reach_the_prompt_and_metadata(server: LoopbackLLMServer) -> None:
    seen: list[tuple[str, str, str]] = []

    def retriever(situation: Any) -> list[tuple[str, str, str]]:
        seen.append((situation.query, situation.platform.name, situation.backend))
        return [("technique-fusion", "Fuse elementwise tails", "Keep the activation in registers.")]

    graph = SearchGraph()
    pid = _add(graph, KERNEL)
    op = _operator(server, retriever=retriever, p_combine=0.0, p_translate=0.0, p_tune=0.0)
    [child] = op.propose(_ctx(graph, (pid,)))
    assert child.metadata["retrieved"] == ["technique-fusion"]
    assert "Keep the activation in registers." in server.requests[-1]["messages"][-1]["content"]
    query, platform, backend = seen[0]
    assert (
        "memory bandwidth" in query and "elementwise" in query and (platform, backend) == ("h100", "triton")
    )


def test_lineage_attempts_are_shown(server: LoopbackLLMServer) -> None:
    graph = SearchGraph()
    pid = _add(graph, KERNEL)
    sibling = Candidate(
        KERNEL.replace("mask=mask)", "mask=None)"),
        "triton",
        "llm",
        "improve",
        (pid,),
        {"idea": "Drop a mask."},
    )
    graph.add_candidate(sibling)
    bad = EvalReport(sibling.id, Status.INCORRECT, max_abs_error=3.0)
    graph.record(sibling.id, bad, score(bad, BASELINES))
    _operator(server, p_combine=0.0, p_translate=0.0, p_tune=0.0).propose(_ctx(graph, (pid,)))
    user = server.requests[-1]["messages"][-1]["content"]
    assert "## Attempts so far in this lineage (most recent first)" in user
    assert f"- {sibling.id} (improve of this parent): incorrect" in user and 'Idea: "Drop a mask."' in user
    assert "+    x = tl.load(x_ptr + offs, mask=None)" in user


def test_concurrent_proposals_from_worker_threads(server: LoopbackLLMServer) -> None:
    op = _operator(server, samples_per_prompt=6)
    graph = SearchGraph()
    results: list[Candidate] = []
    lock = threading.Lock()

    def work() -> None:
        children = op.propose(_ctx(graph, ()))
        with lock:
            results.extend(children)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Same prompt six times, six samples allowed: six distinct sample numbers, six requests.
    assert len(results) == 6 and len(server.requests) == 6
    assert op.accounting.totals().calls == 6 and op.report()["modes"] == {"generate": 6}


def test_built_from_config_mappings(tmp_path: Path) -> None:
    with LoopbackLLMServer(by_mode) as srv:
        config = {
            "enabled": True,
            "base_url": srv.base_url,
            "model": "m",
            "api_key_env": "",
            "cache_dir": str(tmp_path),
        }
        op = LLMOperator(config=config, kb_config={"enabled": False})
        [child] = op.propose(_ctx(SearchGraph(), ()))
        assert child.metadata["model"] == "m" and op.report()["base_url"] == srv.base_url
        assert any(tmp_path.glob("*/*.json"))  # the reply went into the cache folder
    with pytest.raises(ValueError, match="unknown llm config keys \\['modle'\\]"):
        LLMOperator(config={"modle": "m"})


@pytest.mark.kb
def test_real_knowledge_base_documents_reach_the_prompt(server: LoopbackLLMServer) -> None:
    pytest.importorskip("faiss")
    pytest.importorskip("sentence_transformers")
    graph = SearchGraph()
    pid = _add(graph, KERNEL)
    op = _operator(server, kb_config={"enabled": True}, p_combine=0.0, p_translate=0.0, p_tune=0.0)
    [child] = op.propose(_ctx(graph, (pid,)))
    retrieved = child.metadata["retrieved"]
    assert retrieved, "the shipped knowledge base should match a memory-bound Triton kernel"
    user = server.requests[-1]["messages"][-1]["content"]
    assert "## Notes from the knowledge base" in user
    kb_ids = {doc.id for doc in op._kb[0].documents} if op._kb else set()
    assert all(doc_id in kb_ids or doc_id.startswith("past-win:") for doc_id in retrieved)


def test_transcripts_and_run_dir_cache(tmp_path: Path) -> None:
    with LoopbackLLMServer(by_mode) as srv:
        config = {"base_url": srv.base_url, "model": "m", "api_key_env": ""}
        op = LLMOperator(
            config=config, kb_config={"enabled": False}, run_dir=tmp_path, transcript_dir=tmp_path / "prompts"
        )
        [child] = op.propose(_ctx(SearchGraph(), ()))
    [transcript] = (tmp_path / "prompts").glob("*.md")
    text = transcript.read_text()
    assert transcript.name == f"{child.metadata['prompt_id']}-0.md"
    assert text.startswith("### system") and "### reply" in text and "ANSWER_TO = 'Task:" in text
    assert len(list((tmp_path / "llm_cache").glob("*/*.json"))) == 1
