"""A whole search whose LLM (a scripted OpenAI-compatible server on loopback) hands it cheating kernels.

Each cheat passes the static checks (their spelling rules do not see it) and is meant to win on a verdict
or a timing it forges from inside its process: the comparison patched through `os.sys.modules`, the
harness's clocks slowed, the work skipped once the check looks done. The judge decides outside the
candidate's process, so none may be reported as best, and the honest kernel the server sends after them,
evaluated by the same worker, must be judged correct.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.llm_server import KERNEL, REFERENCE, LoopbackLLMServer, fenced
from tests.test_llm_search_e2e import _compose

pytest.importorskip("openai")

_REACH = 'import os\n_m = os.sys.modules.get("kernel" + "evolve.eval.{module}")\n'

PATCHED_COMPARISON = (
    _REACH.format(module="correctness")
    + "if _m is not None:\n"
    + "    _m.within_tolerance = lambda *a, **k: (True, 0.0)\n"
    + '    _m._compare_trial = lambda *a, **k: ("", "", 0.0)\n'
    + KERNEL.replace("self.scale, BLOCK", "self.scale * 0.5, BLOCK")
)
SLOWED_CLOCK = (
    _REACH.format(module="timers")
    + "if _m is not None:\n"
    + '    _real = _m._clocks["perf_counter"]\n'
    + '    _m._clocks["perf_counter"] = lambda: _real() / 500.0\n'
    + KERNEL
)
SKIPS_WHEN_TIMED = KERNEL.replace(
    "        out = torch.empty_like(x)\n",
    "        out = torch.empty_like(x)\n"
    "        self.calls = getattr(self, 'calls', 0) + 1\n"
    "        if self.calls > 3:\n"
    "            return out\n",
)
CHEATS = {
    "patched_comparison": PATCHED_COMPARISON,
    "slowed_clock": SLOWED_CLOCK,
    "skips_when_timed": SKIPS_WHEN_TIMED,
}


class CheatingModel:
    """Every cheat once, then the honest kernel, then the honest kernel with other block sizes."""

    def __init__(self) -> None:
        self.replies = [*CHEATS.values(), KERNEL]
        self.blocks = iter([256, 512, 2048])

    def __call__(self, request: dict[str, Any]) -> str:
        if self.replies:
            return fenced(self.replies.pop(0))
        block = next(self.blocks, 128)
        return fenced(
            KERNEL.replace("triton.cdiv(n, 1024)", f"triton.cdiv(n, {block})").replace(
                "BLOCK=1024", f"BLOCK={block}"
            )
        )


def test_cheating_kernels_from_an_llm_never_win_and_the_next_one_is_judged_right(tmp_path: Path) -> None:
    from kernelevolve.app import run_search
    from kernelevolve.search.graph import SearchGraph

    body = "\n".join("  " + line for line in REFERENCE.splitlines())
    spec_file = tmp_path / "scaled_relu.yaml"
    spec_file.write_text(f"name: scaled_relu\nreference_code: |\n{body}\n")
    with LoopbackLLMServer(CheatingModel()) as server:
        cfg = _compose(
            [
                f"+spec={spec_file}",
                "platform=cpu",
                "llm=vllm",
                f"llm.base_url={server.base_url}",
                "llm.model=scripted",
                "llm.max_retries=0",
                "search.operators=[]",
                "search.termination.max_evaluations=6",
                "search.termination.wall_clock_s=240",
                "platform.eval.measure_compile_baseline=false",
                "platform.eval.timing_trials=3",
                "platform.eval.warmup_trials=2",
                "platform.eval.correctness_trials=2",
                f"run.root={tmp_path / 'runs'}",
                "kb.enabled=false",
                "progress=false",
            ]
        )
        result = run_search(cfg)
    graph = SearchGraph.load(result.run_dir / "graph.jsonl")
    by_source = {node.candidate.source.strip(): node for node in graph.nodes() if node.report is not None}
    verdicts = {
        name: by_source[source.strip()].report
        for name, source in CHEATS.items()
        if source.strip() in by_source
    }
    assert set(verdicts) == set(CHEATS), f"not every cheat was evaluated: {sorted(verdicts)}"
    for name, report in verdicts.items():
        assert report is not None and not report.ok, f"{name} passed: {report}"
    # reaching the harness through os.sys.modules is caught by the static checks; where it is not, the
    # judge's own comparison and clock are what the patch never reaches
    assert verdicts["patched_comparison"].error_name in ("introspection", "mismatch")
    assert verdicts["slowed_clock"].error_name in ("introspection", "timing_inconsistent")
    # (the decoy calls after the checks are on fresh inputs too: they may catch it first)
    assert verdicts["skips_when_timed"].error_name in (
        "timed_output_mismatch",
        "no_kernel_ran",
        "kernel_share_decoy_wrong",
    )
    honest = by_source[KERNEL.strip()].report
    assert honest is not None and honest.ok, honest  # evaluated after the cheats, by the same worker
    results = json.loads((result.run_dir / "results.json").read_text())
    assert results["best"] is not None
    cheat_ids = {by_source[source.strip()].id for source in CHEATS.values()}
    assert results["best"]["id"] not in cheat_ids
    best_kernel = (result.run_dir / "best" / "kernel.py").read_text()
    assert all(source.strip() not in best_kernel for source in CHEATS.values())
