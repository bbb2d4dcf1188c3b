"""What one LLM operator call needs, read from the search graph into a `PromptInputs` value.

`gather_inputs` collects the parents and their reports, the lineage's attempts (llm/memory.py),
per-shape shapes and traffic, a bottleneck diagnosis, backend guidance and knowledge-base retrievals. Turning that
value into text is kernelevolve/llm/prompts.py's job.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kernelevolve.llm.diagnosis import Diagnosis, diagnose
from kernelevolve.llm.memory import Attempt, recall
from kernelevolve.llm.retrieval import Situation
from kernelevolve.specs.traced_tags import program_tags
from kernelevolve.specs.traffic import IOSummary, describe_io
from kernelevolve.types import Baseline, EvalReport, FitnessValue, KernelSpec

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform
    from kernelevolve.search.interfaces import ProposalContext

log = logging.getLogger(__name__)

_DEFAULT_GUIDANCE = {
    "triton": (
        "Triton: write @triton.jit kernels and launch them from ModelNew.forward as kernel[grid](...). "
        "Use tl.program_id for tiles, tl.arange for offsets, masks on every tl.load/tl.store at ragged "
        "edges, tl.dot for matrix products (fp32 accumulator), tl.constexpr for block sizes (powers of two)."
    ),
    "cute": (
        "CuTe DSL: import cutlass and cutlass.cute as cute; write a @cute.kernel and a @cute.jit host "
        "function that launches it; pass torch tensors through cutlass.torch / from_dlpack; compile once "
        "with cute.compile and reuse the compiled function across calls."
    ),
}
MEMORY_TOKENS = 1200  # default budget of the attempts section

# situation -> [(title, text)] or [(id, title, text)], best first (llm/retrieval.py's KBRetriever).
Retriever = Callable[[Situation], Sequence[Sequence[str]]]


@dataclass(frozen=True)
class ParentInfo:
    id: str
    source: str
    backend: str
    report: EvalReport | None
    fitness: FitnessValue | None = None


@dataclass(frozen=True)
class RetrievedDoc:
    id: str
    title: str
    text: str


@dataclass(frozen=True)
class PromptInputs:
    mode: str
    spec: KernelSpec
    platform: Platform
    backend: str  # the backend the child must be written in
    parents: tuple[ParentInfo, ...] = ()
    baselines: Mapping[str, Baseline] = field(default_factory=dict)
    io: Mapping[str, IOSummary | None] = field(default_factory=dict)  # shape name -> shapes/traffic
    diagnosis: Diagnosis | None = None
    attempts: tuple[Attempt, ...] = ()  # the lineage's attempts, most recent first
    memory_tokens: int = MEMORY_TOKENS
    retrieved: tuple[RetrievedDoc, ...] = ()
    guidance: str = ""
    strict: bool = True


_guidance_cache: dict[tuple[str, str], str] = {}
_guidance_lock = threading.Lock()


def backend_guidance(backend: str, platform: Platform) -> str:
    """Backend.prompt_guidance, or a short default when the backend cannot be imported here."""
    key = (backend, platform.name)
    with _guidance_lock:
        if key in _guidance_cache:
            return _guidance_cache[key]
    try:
        from kernelevolve.backends import get_backend

        text = get_backend(backend).prompt_guidance(platform)
    except (ImportError, KeyError, AttributeError) as exc:
        log.debug("no prompt guidance from backend %s (%s); using the default", backend, exc)
        text = _DEFAULT_GUIDANCE.get(backend, "")
    with _guidance_lock:
        _guidance_cache[key] = text
    return text


def _baselines(ctx: ProposalContext, parents: Sequence[ParentInfo]) -> dict[str, Baseline]:
    """The run's baselines (recorded by the engine as a graph event), else those in a report."""
    recorded = ctx.graph.recorded_baselines()
    if recorded:
        return recorded
    reports = [p.report for p in parents] + [n.report for n in ctx.graph.evaluated()]
    for report in reports:
        if report is not None and report.baselines:
            return dict(report.baselines)
    return {}


def _retrieve(retriever: Retriever | None, situation: Situation) -> tuple[RetrievedDoc, ...]:
    if retriever is None:
        return ()
    try:
        found = retriever(situation)
    except Exception:  # retrieval is an aid; a broken index must not stop proposals
        log.warning("knowledge-base retrieval failed; continuing without it", exc_info=True)
        return ()
    docs = []
    for item in found:
        if len(item) >= 3:
            docs.append(RetrievedDoc(str(item[0]), str(item[1]), str(item[2])))
        elif len(item) == 2:
            docs.append(RetrievedDoc(str(item[0]), str(item[0]), str(item[1])))
    return tuple(docs)


def gather_inputs(
    ctx: ProposalContext,
    mode: str,
    backend: str,
    parent_ids: Sequence[str],
    *,
    retriever: Retriever | None = None,
    strict: bool = True,
    memory_tokens: int = MEMORY_TOKENS,
) -> PromptInputs:
    """Everything `build_prompt` needs for one call, read from the context's graph."""
    graph, spec, platform = ctx.graph, ctx.spec, ctx.platform
    parents = []
    for pid in parent_ids:
        node = graph.node(pid)
        parents.append(
            ParentInfo(pid, node.candidate.source, node.candidate.backend, node.report, node.fitness)
        )
    baselines = _baselines(ctx, parents)
    io = {shape.name: describe_io(spec, shape) for shape in spec.shapes}
    diagnosis = None
    if parents and parents[0].report is not None:
        moved = {k: v.bytes_moved for k, v in io.items() if v and v.bytes_moved}
        flops = {k: v.flops for k, v in io.items() if v and v.flops}
        diagnosis = diagnose(parents[0].report, baselines, spec, platform, moved, flops)
    # what the reference does (its traced tags), never its name
    situation = Situation(platform, backend, program_tags(spec), diagnosis, spec.dtype)
    return PromptInputs(
        mode=mode,
        spec=spec,
        platform=platform,
        backend=backend,
        parents=tuple(parents),
        baselines=baselines,
        io=io,
        diagnosis=diagnosis,
        attempts=recall(graph, parent_ids, mode) if memory_tokens > 0 else (),
        memory_tokens=memory_tokens,
        retrieved=_retrieve(retriever, situation),
        guidance=backend_guidance(backend, platform),
        strict=strict,
    )
