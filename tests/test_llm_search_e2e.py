"""A whole search with llm=openai pointed at a real chat-completions server on loopback.

The server answers like a model would: a broken first kernel, a fix when asked to repair, and
correct but different kernels when asked to improve. The run must show LLM-made nodes, a repair
that fixed a broken parent, and token counts in results.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.llm_server import KERNEL, REFERENCE, LoopbackLLMServer, fenced

pytest.importorskip("openai")

BROKEN = KERNEL.replace("out = torch.empty_like(x)", "out = torch.empty_like(x_missing)")


def _variant(block: int) -> str:
    return KERNEL.replace("triton.cdiv(n, 1024)", f"triton.cdiv(n, {block})").replace(
        "BLOCK=1024", f"BLOCK={block}"
    )


class ScriptedModel:
    """Answers by the task line of the prompt, as a model following our prompts would."""

    def __init__(self) -> None:
        self.variants = iter([256, 512, 2048, 128, 64, 4096])
        self.tasks: list[str] = []

    def __call__(self, request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if "Task: write a first" in prompt:
            self.tasks.append("generate")
            return fenced(BROKEN, "A first version.")
        if "fails; fix it" in prompt:
            self.tasks.append("repair")
            return fenced(KERNEL, "The output was allocated from an undefined name; fixed.")
        self.tasks.append("other")
        return fenced(_variant(next(self.variants, 32)), "Different block size.")


def _compose(overrides: list[str]) -> dict[str, Any]:
    from kernelevolve.config import compose, to_plain

    return to_plain(compose(overrides))


def test_llm_search_end_to_end(tmp_path: Path) -> None:
    from kernelevolve.app import run_search

    body = "\n".join("  " + line for line in REFERENCE.splitlines())
    spec_file = tmp_path / "scaled_relu.yaml"
    spec_file.write_text(f"name: scaled_relu\nreference_code: |\n{body}\n")
    model = ScriptedModel()
    with LoopbackLLMServer(model) as server:
        cfg = _compose(
            [
                f"+spec={spec_file}",
                "platform=cpu",
                "llm=vllm",
                f"llm.base_url={server.base_url}",
                "llm.model=scripted",
                "llm.max_retries=0",
                "search.operators=[]",
                "search.termination.max_evaluations=5",
                "search.termination.wall_clock_s=240",
                "platform.eval.measure_compile_baseline=false",
                "platform.eval.timing_trials=2",
                "platform.eval.correctness_trials=2",
                f"run.root={tmp_path / 'runs'}",
                "kb.enabled=false",
                "progress=false",
            ]
        )
        result = run_search(cfg)
    results = json.loads((result.run_dir / "results.json").read_text())
    assert results["evaluations_by_operator"]["llm"]["ok"] >= 1
    assert results["best"] is not None and results["best"]["operator"] == "llm"
    llm = results["operators"]["llm"]
    assert llm["accounting"]["prompt_tokens"] > 0 and llm["accounting"]["completion_tokens"] > 0
    assert llm["modes"].get("repair", 0) >= 1

    from kernelevolve.search.graph import SearchGraph

    graph = SearchGraph.load(result.run_dir / "graph.jsonl")
    repairs = [n for n in graph.nodes() if n.candidate.mode == "repair" and n.report and n.report.ok]
    assert repairs, "no repair fixed its parent"
    parent = graph.node(repairs[0].candidate.parent_ids[0])
    assert parent.report is not None and not parent.report.ok
    assert model.tasks[0] == "generate" and "repair" in model.tasks


def test_unreachable_endpoint_is_recorded_and_the_search_goes_on(tmp_path: Path, caplog: Any) -> None:
    from kernelevolve.app import run_search

    server = LoopbackLLMServer(["unused"]).start()
    base_url = server.base_url
    server.stop()  # the port is closed: every call is refused
    cfg = _compose(
        [
            "+spec=softmax",
            "platform=cpu",
            "llm=vllm",
            f"llm.base_url={base_url}",
            "llm.max_retries=0",
            "search.operators=[template,tune]",
            "search.termination.max_evaluations=4",
            "platform.eval.measure_compile_baseline=false",
            "platform.eval.timing_trials=2",
            "platform.eval.correctness_trials=2",
            f"run.root={tmp_path / 'runs'}",
            "kb.enabled=false",
            "progress=false",
        ]
    )
    with caplog.at_level("WARNING"):
        result = run_search(cfg)
    results = result.results
    assert results["evaluations"] == 4 and results["best"] is not None
    assert results["best"]["operator"] in ("template", "tune")
    llm = results["operators"]["llm"]
    assert llm["failures"] and all(f["kind"] == "unavailable" for f in llm["failures"])
    assert "llm" not in results["evaluations_by_operator"]
    warnings = [r.getMessage() for r in caplog.records if "unavailable" in r.getMessage().lower()]
    assert len(warnings) == 1, warnings  # said clearly, once


def test_a_resumed_run_reports_the_whole_runs_llm_totals(tmp_path: Path) -> None:
    """results.json after a resume counts every session's calls and tokens, and the resumed session
    sends no prompt the first one had a reply for."""
    from kernelevolve.app import run_search
    from tests.llm_replay import MAX_TOKENS, ReplayModel

    body = "\n".join("  " + line for line in REFERENCE.splitlines())
    spec_file = tmp_path / "scaled_relu.yaml"
    spec_file.write_text(f"name: scaled_relu\nreference_code: |\n{body}\n")
    common = [
        "platform=cpu",
        "llm=vllm",
        "llm.model=replay",
        f"llm.max_tokens={MAX_TOKENS}",
        "llm.max_retries=0",
        "search.operators=[]",
        "search.termination.wall_clock_s=240",
        "platform.eval.measure_compile_baseline=false",
        "platform.eval.timing_trials=2",
        "platform.eval.correctness_trials=2",
        "kb.enabled=false",
        "progress=false",
    ]
    with LoopbackLLMServer(ReplayModel()) as server:
        url = f"llm.base_url={server.base_url}"
        first = run_search(
            _compose(
                [
                    f"+spec={spec_file}",
                    url,
                    *common,
                    "search.termination.max_evaluations=3",
                    f"run.root={tmp_path}",
                ]
            )
        )
        sent = [r["messages"] for r in server.requests]
        resumed = run_search(
            _compose([f"resume={first.run_dir}", url, *common, "search.termination.max_evaluations=6"])
        )
        again = [r["messages"] for r in server.requests[len(sent) :]]
    assert again and not [m for m in again if m in sent]
    llm = json.loads((resumed.run_dir / "results.json").read_text())["operators"]["llm"]
    accounting = llm["accounting"]
    assert accounting["sessions"] == 2 and accounting["calls"] == len(sent) + len(again)
    assert accounting["this_session"]["calls"] == len(again)
    words = sum(len(m["content"].split()) for messages in sent + again for m in messages)
    assert accounting["prompt_tokens"] == words
    assert llm["per_evaluation"]["evaluations"] == resumed.results["evaluations"] >= 6
