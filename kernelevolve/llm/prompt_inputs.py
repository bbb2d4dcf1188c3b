"""What one LLM operator call needs, read from the search graph into a `PromptInputs` value.

`gather_inputs` collects the parents and their reports, a sibling attempt, per-shape shapes and
traffic, a bottleneck diagnosis, backend guidance and knowledge-base retrievals. Turning that
value into text is kernelevolve/llm/prompts.py's job.
"""

from __future__ import annotations

import difflib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kernelevolve.llm.diagnosis import Diagnosis, diagnose, telling_line
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
_DIFF_LINES = 60

# (query, platform, backend) -> [(title, text)] or [(id, title, text)], best first.
Retriever = Callable[[str, "Platform", str], Sequence[Sequence[str]]]


@dataclass(frozen=True)
class ParentInfo:
    id: str
    source: str
    backend: str
    report: EvalReport | None
    fitness: FitnessValue | None = None


@dataclass(frozen=True)
class SiblingInfo:
    """Another child of the same parent: what it changed and how it fared."""

    id: str
    mode: str
    outcome: str
    diff: str


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
    sibling: SiblingInfo | None = None
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


def _outcome(report: EvalReport | None, fitness: FitnessValue | None) -> str:
    if report is None:
        return "not evaluated yet"
    if report.ok:
        speed = f"{fitness.objective:.2f}x eager (geomean)" if fitness and fitness.feasible else "correct"
        return f"ok, {speed}"
    detail = telling_line(report.feedback, 160)
    return (
        f"{report.status.value}"
        + (f" ({report.error_name})" if report.error_name else "")
        + (f": {detail}" if detail else "")
    )


def _sibling(ctx: ProposalContext, parent_id: str) -> SiblingInfo | None:
    """The most recently made evaluated child of the parent, with its diff against the parent."""
    graph = ctx.graph
    children = [graph.node(c) for c in graph.children(parent_id)]
    done = [n for n in children if n.evaluated]
    if not done:
        return None
    child = max(done, key=lambda n: n.order)
    parent_src = graph.node(parent_id).candidate.source.splitlines()
    diff = list(
        difflib.unified_diff(
            parent_src, child.candidate.source.splitlines(), "parent", "sibling", n=2, lineterm=""
        )
    )
    if len(diff) > _DIFF_LINES:
        diff = diff[:_DIFF_LINES] + [f"... ({len(diff) - _DIFF_LINES} more diff lines)"]
    return SiblingInfo(child.id, child.candidate.mode, _outcome(child.report, child.fitness), "\n".join(diff))


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


def _retrieve(
    retriever: Retriever | None, query: str, platform: Platform, backend: str
) -> tuple[RetrievedDoc, ...]:
    if retriever is None:
        return ()
    try:
        found = retriever(query, platform, backend)
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
    query = diagnosis.query if diagnosis else "first kernel design"
    query = " ".join([query, backend, *program_tags(spec)])  # what the reference does, not its name
    sibling = _sibling(ctx, parents[0].id) if len(parents) == 1 else None
    return PromptInputs(
        mode=mode,
        spec=spec,
        platform=platform,
        backend=backend,
        parents=tuple(parents),
        baselines=baselines,
        io=io,
        diagnosis=diagnosis,
        sibling=sibling,
        retrieved=_retrieve(retriever, query, platform, backend),
        guidance=backend_guidance(backend, platform),
        strict=strict,
    )
