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
    """Answer every prompt with the kernel, marked with the task line so children differ."""
    return fenced(f"# answer to: {_task(body)}\n{KERNEL}")


def _config(server: LoopbackLLMServer, **overrides: Any) -> LLMConfig:
    values: dict[str, Any] = {
        "base_url": server.base_url,
        "model": "loopback",
        "api_key_env": "",
        "max_retries": 1,
        "backoff_s": 0.01,
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
    assert "# answer to: Task: write a first Triton implementation" in child.source
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
    edit = "<<<<<<< SEARCH\n    mask = offs < n\n=======\n    mask = offs < n  # bounds\n>>>>>>> REPLACE\n"
    with LoopbackLLMServer([f"Small fix.\n{edit}"]) as srv:
        graph = SearchGraph()
        pid = _add(graph, KERNEL, Status.INCORRECT, max_abs_error=2.0)
        [child] = _operator(srv).propose(_ctx(graph, (pid,)))
    assert child.mode == "repair" and child.metadata["parse"] == "edits"
    assert child.source == KERNEL.replace("mask = offs < n", "mask = offs < n  # bounds")


def test_garbage_and_unchanged_replies_are_recorded_failures() -> None:
    with LoopbackLLMServer(["I am not sure what you mean.", fenced(KERNEL)]) as srv:
        graph = SearchGraph()
        pid = _add(graph, KERNEL)
        op = _operator(srv, p_combine=0.0, p_translate=0.0, p_tune=0.0)
        assert op.propose(_ctx(graph, (pid,))) == []
        assert op.propose(_ctx(graph, (pid,))) == []  # the reply is the parent itself
    kinds = [(f["kind"], f["mode"], f["parent_ids"]) for f in op.failures]
    assert kinds == [("parse", "improve", [pid]), ("unchanged", "improve", [pid])]
    assert "no code block" in op.failures[0]["reason"]
    report = op.report()
    assert report["failure_counts"] == {"parse": 1, "unchanged": 1} and report["accounting"]["calls"] == 2
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


def test_repeated_prompt_is_a_new_sample_and_a_resume_replays_the_cache(tmp_path: Path) -> None:
    replies = iter(range(100))
    lock = threading.Lock()

    def numbered(body: dict[str, Any]) -> str:
        with lock:
            return fenced(f"# sample {next(replies)}\n{KERNEL}")

    with LoopbackLLMServer(numbered) as srv:
        op = _operator(srv, cache=ResponseCache(tmp_path))
        first = op.propose(_ctx(SearchGraph(), ()))[0]
        second = op.propose(_ctx(SearchGraph(), ()))[0]
        assert first.id != second.id and len(srv.requests) == 2
        resumed = _operator(srv, cache=ResponseCache(tmp_path))
        again = resumed.propose(_ctx(SearchGraph(), ()))[0]
        assert again.id == first.id and again.metadata["cached"] and len(srv.requests) == 2


def test_retrieved_documents_reach_the_prompt_and_metadata(server: LoopbackLLMServer) -> None:
    seen: list[tuple[str, str, str]] = []

    def retriever(query: str, platform: Any, backend: str) -> list[tuple[str, str, str]]:
        seen.append((query, platform.name, backend))
        return [("technique-fusion", "Fuse elementwise tails", "Keep the activation in registers.")]

    graph = SearchGraph()
    pid = _add(graph, KERNEL)
    op = _operator(server, retriever=retriever, p_combine=0.0, p_translate=0.0, p_tune=0.0)
    [child] = op.propose(_ctx(graph, (pid,)))
    assert child.metadata["retrieved"] == ["technique-fusion"]
    assert "Keep the activation in registers." in server.requests[-1]["messages"][-1]["content"]
    query, platform, backend = seen[0]
    assert "memory-bound" in query and "elementwise" in query and (platform, backend) == ("h100", "triton")


def test_sibling_outcome_is_shown(server: LoopbackLLMServer) -> None:
    graph = SearchGraph()
    pid = _add(graph, KERNEL)
    sibling = Candidate(KERNEL.replace("mask=mask)", "mask=None)"), "triton", "llm", "improve", (pid,))
    graph.add_candidate(sibling)
    bad = EvalReport(sibling.id, Status.INCORRECT, max_abs_error=3.0)
    graph.record(sibling.id, bad, score(bad, BASELINES))
    _operator(server, p_combine=0.0, p_translate=0.0, p_tune=0.0).propose(_ctx(graph, (pid,)))
    user = server.requests[-1]["messages"][-1]["content"]
    assert f"An earlier attempt from the same parent (improve, id {sibling.id}): incorrect" in user
    assert "+    x = tl.load(x_ptr + offs, mask=None)" in user


def test_concurrent_proposals_from_worker_threads(server: LoopbackLLMServer) -> None:
    op = _operator(server)
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
    # Same prompt six times: six distinct sample numbers, six requests, all answered.
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
    assert text.startswith("### system") and "### reply" in text and "# answer to: Task:" in text
    assert len(list((tmp_path / "llm_cache").glob("*/*.json"))) == 1
