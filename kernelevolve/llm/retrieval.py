"""Knowledge-base retrieval for a prompt, chosen by the situation: diagnosis, platform and backend.

A `Situation` is what the search knows when it asks: the parent's diagnosis (a failure, a bottleneck,
or none for a first kernel), what the reference computes (its traced tags), the platform and the
backend. `plan` turns it into searches: failures look in the DSL guides and the constraints first,
bottlenecks in the techniques and the platform's own notes, first kernels in the techniques for the
computation and the DSL's wrapper guide. On a CPU platform documents about GPU launch tuning are
left out: the interpreter ignores those settings.

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
    "incorrect": "wrong result numerical precision accumulation masking boundary",
    "rejected_static": "not allowed in strict mode library calls fallback contract",
    "timeout": "hang grid size loop bound",
    "worker_crash": "crash out of bounds memory access",
}
_BOTTLENECK_TERMS = {
    "launch_bound": "launch overhead small problem fewer kernels fusion persistent",
    "memory_bound": "memory bandwidth bound vectorised coalesced access fusion single pass",
    "compute_bound": "compute bound tiling block sizes pipelining tensor cores",
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
    what = " ".join(situation.tags)
    kind = situation.kind
    where = "cpu interpreter" if situation.on_cpu else situation.platform.name
    if kind in FAILURES:
        assert situation.diagnosis is not None
        detail = situation.diagnosis.statement
        first = ("constraint", "dsl") if kind == "rejected_static" else ("dsl", "constraint")
        return [
            Search(f"{_FAILURE_TERMS[kind]} {detail} {situation.backend} {where}", first, 2),
            Search(f"{what} {_FAILURE_TERMS[kind]}", ("technique",), 1),
        ]
    if kind == "first_kernel":
        searches = [Search(f"{what} kernel {situation.dtype}", ("technique",), 2)]
        if situation.on_cpu:
            searches.append(
                Search(f"writing {situation.backend} kernels on the cpu interpreter", ("hardware",), 1)
            )
        else:
            searches.append(Search(f"writing a {situation.backend} ModelNew wrapper {what}", ("dsl",), 1))
        return searches
    terms = _BOTTLENECK_TERMS.get(kind, _BOTTLENECK_TERMS["timing_only"])
    searches = [Search(f"{terms} {what} {situation.dtype}", ("technique",), 2)]
    if situation.on_cpu:
        searches.append(Search(f"{what} {situation.backend} kernel", ("dsl",), 1))
    else:
        searches.append(
            Search(f"{terms} {situation.platform.name} {situation.backend}", ("hardware", "dsl"), 1)
        )
    return searches


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
