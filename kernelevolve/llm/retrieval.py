"""Knowledge-base retrieval for a prompt, chosen by the situation: diagnosis, platform and backend.

A `Situation` is what the search knows when it asks: the parent's diagnosis (a failure, a bottleneck,
or none for a first kernel), what the reference computes (its traced tags), the platform and the
backend. `plan` turns it into searches: failures look in the DSL guides and the constraints first
(wrong results in the numerics techniques too), then the computation's technique; bottlenecks in the
techniques for that bottleneck and the platform's optimisation notes; first kernels in the
computation's techniques and the DSL's wrapper guide. On a CPU platform documents about GPU launch
tuning are left out (the interpreter ignores those settings) and the CPU platform's own notes come
instead. tests/test_kb_situations.py holds 20 situations and the documents each should retrieve.

`KBRetriever` runs a plan against kernelevolve.kb (documents plus past wins). Past wins recorded after
the run began are not offered, so a resumed run rebuilds the prompts it sent before (and finds their
replies in the cache) instead of prompts changed by its own earlier sessions' wins.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevolve.llm.diagnosis import Diagnosis
from kernelevolve.types import KernelSpec

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform

log = logging.getLogger(__name__)

FAILURES = ("compile_error", "runtime_error", "incorrect", "rejected_static", "timeout", "worker_crash")
# Documents about settings the CPU interpreter ignores (kernelevolve/knowledge_base tags).
GPU_TUNING_TAGS = (
    "num-warps",
    "num-stages",
    "autotune",
    "occupancy",
    "pipelining",
    "tensor-cores",
    "tma",
    "warp-specialization",
    "cuda-graphs",
    "launch-overhead",
    "wave-quantization",
    "bank-conflicts",
)
_FAILURE_TERMS = {
    "compile_error": "compile error fix",
    "runtime_error": "runtime error out of bounds pointer mask fix",
    "incorrect": "wrong result numerical precision fp32 accumulation tolerance masking boundary",
    "rejected_static": "not allowed in strict mode library calls fallback contract",
    "timeout": "hang grid size loop bound",
    "worker_crash": "crash out of bounds memory access",
}
_BOTTLENECK_TERMS = {
    "launch_bound": "launch overhead dominates small shapes latency cuda graphs persistent kernel",
    "memory_bound": "reach memory bandwidth vectorised coalesced loads",
    "compute_bound": "compute-bound gemm tiling tile sizes grouped ordering L2 data reuse",
    "no_tensor_cores": "tensor cores tl.dot mma low precision inputs",
    "timing_only": "speed fusion block sizes",
}


@dataclass(frozen=True)
class Search:
    query: str
    kinds: tuple[str, ...]  # KB document kinds searched
    k: int  # documents taken from this search


@dataclass(frozen=True)
class Situation:
    platform: Platform
    backend: str
    tags: tuple[str, ...]  # what the reference computes (specs.traced_tags.program_tags)
    diagnosis: Diagnosis | None = None  # the parent's; None for a first kernel
    dtype: str = "float32"

    @property
    def kind(self) -> str:
        return self.diagnosis.kind if self.diagnosis else "first_kernel"

    @property
    def on_cpu(self) -> bool:
        return self.platform.device == "cpu"

    @property
    def query(self) -> str:
        """The situation in a line (what a retriever without a plan searches for)."""
        return " ".join(s.query for s in plan(self)[:1])

    def excluded_tags(self) -> tuple[str, ...]:
        return GPU_TUNING_TAGS if self.on_cpu else ()


def plan(situation: Situation) -> list[Search]:
    """The searches for a situation, most important first."""
    what = " ".join(situation.tags).replace("_", " ")
    kind, backend = situation.kind, situation.backend
    cpu = situation.on_cpu
    computation = f"{what} kernel {situation.dtype}"
    platform_doc = (
        Search("correct simple kernels on the cpu platform interpreter cpu tensors", ("hardware",), 1)
        if cpu
        else Search(f"optimising kernels for the {situation.platform.name}", ("hardware",), 1)
    )
    if kind in FAILURES:
        assert situation.diagnosis is not None
        terms = f"{_FAILURE_TERMS[kind]} {situation.diagnosis.statement} {backend}"
        first: tuple[str, ...] = {
            "rejected_static": ("constraint", "dsl"),
            "incorrect": ("technique", "dsl"),
        }.get(kind, ("dsl", "constraint"))
        if cpu:  # the interpreter's own limits explain many failures there
            first = (*first, "hardware")
            terms += " cpu interpreter"
        return [Search(terms, first, 2), Search(computation, ("technique",), 1)]
    if kind == "first_kernel":
        wrapper = Search(f"writing a {backend} ModelNew wrapper {what}", ("dsl",), 1)
        return [Search(computation, ("technique",), 2), platform_doc if cpu else wrapper]
    terms = _BOTTLENECK_TERMS.get(kind, _BOTTLENECK_TERMS["timing_only"])
    if kind == "no_tensor_cores":
        return [Search(f"{terms} {what} {situation.dtype}", ("dsl", "technique"), 2), platform_doc]
    if cpu:  # bottlenecks say little under the interpreter: the computation's own techniques
        return [Search(computation, ("technique", "dsl"), 2), platform_doc]
    return [Search(f"{terms} {what} {situation.dtype}", ("technique",), 2), platform_doc]


class KBRetriever:
    """A plan run against kernelevolve.kb: documents, plus past wins recorded before `cutoff`
    (ISO-8601 UTC; "" for none)."""

    def __init__(self, kb: Any, wins: Any, spec: KernelSpec, k_wins: int = 1, cutoff: str = "") -> None:
        self.kb, self.wins, self.spec = kb, wins, spec
        self.k_wins, self.cutoff = k_wins, cutoff

    def documents(self, situation: Situation) -> list[tuple[str, str, str]]:
        if self.kb is None:
            return []
        excluded = set(situation.excluded_tags())
        found: dict[str, tuple[str, str, str]] = {}
        for search in plan(situation):
            taken = 0
            hits = self.kb.search(
                search.query,
                k=search.k + len(found) + (8 if excluded else 0),
                platform=situation.platform.name,
                backend=situation.backend,
                kinds=search.kinds,
            )
            for hit in hits:
                doc = self.kb.document(hit.doc_id)
                if hit.doc_id in found or excluded & set(doc.tags):
                    continue
                found[hit.doc_id] = (hit.doc_id, hit.title, doc.text)
                taken += 1
                if taken == search.k:
                    break
        return list(found.values())

    def past_wins(self, situation: Situation) -> list[tuple[str, str, str]]:
        if self.wins is None or self.k_wins <= 0:
            return []
        found = []
        for win, _ in self.wins.scored(self.spec, situation.platform.name, situation.backend, None):
            if self.cutoff and not (win.created and win.created < self.cutoff):
                continue
            label = f"Past win: {win.spec_name} on {win.platform}, {win.speedup_vs_eager:.2f}x eager ({win.backend})"
            found.append((f"past-win:{win.candidate_id}", label, f"```python\n{win.source.strip()}\n```"))
            if len(found) == self.k_wins:
                break
        return found

    def __call__(self, situation: Situation) -> list[tuple[str, str, str]]:
        return self.documents(situation) + self.past_wins(situation)


def open_knowledge_base(kb_config: Mapping[str, Any]) -> tuple[Any, Any]:
    """(KnowledgeBase, PastWinStore) from the `kb` config section; raises when the KB cannot load."""
    from kernelevolve.kb import KnowledgeBase, PastWinStore, default_encoder
    from kernelevolve.paths import cache_dir

    root = Path(str(kb_config["cache_dir"])).expanduser() if kb_config.get("cache_dir") else cache_dir()
    encoder = default_encoder()
    return KnowledgeBase.load(directory=root / "kb", encoder=encoder), PastWinStore(
        root / "past_wins", encoder
    )
