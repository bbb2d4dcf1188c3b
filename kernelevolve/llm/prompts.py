"""Prompts for the universal LLM operator, rebuilt for every call.

Two steps: `gather_inputs` reads what a call needs from the search graph (parents and their
reports, a sibling, shapes and traffic, a diagnosis, backend guidance, KB retrievals) into a
`PromptInputs` value; `build_prompt` turns that value into chat messages with the mode's
template (kernelevolve/llm/templates/<mode>.txt, string.Template syntax). `build_prompt` is a
pure function, which is what the snapshot tests pin.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from string import Template
from typing import TYPE_CHECKING

from kernelevolve.llm.diagnosis import Diagnosis, IOSummary, describe_io, diagnose, peak_key, telling_line
from kernelevolve.types import Baseline, EvalReport, FitnessValue, KernelSpec

if TYPE_CHECKING:
    from kernelevolve.interfaces import ProposalContext
    from kernelevolve.platforms import Platform

log = logging.getLogger(__name__)

MODES = ("generate", "improve", "combine", "repair", "tune", "translate")
_EDIT_MODES = ("improve", "repair", "tune")  # a parent exists that edits can apply to
_TITLES = {"triton": "Triton", "cute": "CuTe DSL"}
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
_FEEDBACK_HEAD, _FEEDBACK_TAIL = 1500, 2500
_DOC_CHARS = 1500
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


@dataclass(frozen=True)
class Prompt:
    mode: str
    backend: str
    messages: tuple[dict[str, str], ...]
    retrieved: tuple[str, ...] = ()  # KB document ids
    diagnosis: Diagnosis | None = None

    @property
    def id(self) -> str:
        payload = json.dumps(list(self.messages), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def text(self) -> str:
        return "\n\n".join(f"### {m['role']}\n{m['content']}" for m in self.messages)


def load_template(name: str) -> str:
    return (
        resources.files("kernelevolve.llm").joinpath("templates", f"{name}.txt").read_text(encoding="utf-8")
    )


def title(backend: str) -> str:
    return _TITLES.get(backend, backend)


# --------------------------------------------------------------------------------- sections


def _clip(text: str, head: int = _FEEDBACK_HEAD, tail: int = _FEEDBACK_TAIL) -> str:
    text = text.strip()
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n[... {len(text) - head - tail} characters cut ...]\n{text[-tail:]}"


def _fence(code: str) -> str:
    return f"```python\n{code.strip(chr(10))}\n```"


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if value >= 1e-3 else "<0.001"


def _ratio(num: float | None, den: float | None) -> str:
    return "-" if not num or not den else f"{num / den:.2f}x"


def problem_section(spec: KernelSpec, io: Mapping[str, IOSummary | None]) -> str:
    lines = [f"## Problem: {spec.name}"]
    if spec.description:
        lines.append(spec.description.strip())
    lines += [
        "Reference (PyTorch; ModelNew must compute what Model computes):",
        _fence(spec.reference_source),
    ]
    lines.append(f"Data type: {spec.dtype}. Tolerance: atol {spec.atol:g}, rtol {spec.rtol:g}.")
    lines.append("Benchmark shapes (the module's size constants are rebound per shape):")
    for shape in spec.shapes:
        params = ", ".join(f"{k}={v}" for k, v in shape.params.items()) or "as written"
        line = f"- {shape.name}: {params}"
        summary = io.get(shape.name)
        if summary:
            line += f"; inputs {', '.join(summary.inputs)} -> output {', '.join(summary.outputs)}"
        lines.append(line)
    return "\n".join(lines)


def platform_section(platform: Platform) -> str:
    peaks = ", ".join(f"{k} {v:g}" for k, v in platform.peak_tflops.items())
    facts = [
        f"## Hardware: {platform.name}",
        f"{platform.description}" + (f" (arch {platform.arch})" if platform.arch else ""),
        f"Peak memory bandwidth {platform.peak_bandwidth_gbs:g} GB/s; dense peak TFLOP/s: {peaks}.",
        f"{platform.compute_units} compute units, L2 {platform.l2_bytes / 2**20:g} MiB"
        + (
            f", shared memory per block {platform.shared_memory_per_block_bytes / 1024:g} KiB"
            if platform.shared_memory_per_block_bytes
            else ""
        )
        + f", warp size {platform.warp_size}.",
    ]
    if platform.notes:
        facts.append(platform.notes.strip())
    return "\n".join(facts)


def timing_table(inputs: PromptInputs, report: EvalReport) -> str:
    """Per-shape latency of a working kernel against eager, torch.compile and the roofline floor."""
    key = peak_key(inputs.spec.dtype)
    rows = [
        "| shape | this kernel ms | eager ms | torch.compile ms | vs eager | vs compile | roofline floor ms |"
    ]
    rows.append("|---|---|---|---|---|---|---|")
    for name, stats in report.latency.items():
        base = inputs.baselines.get(name) or report.baselines.get(name)
        eager = base.eager.median_ms if base else None
        compiled = base.compiled.median_ms if base and base.compiled else None
        summary = inputs.io.get(name)
        floor = None
        if summary and (summary.bytes_moved or summary.flops):
            floor = inputs.platform.roofline_floor_ms(summary.bytes_moved or 0.0, summary.flops or 0.0, key)
        rows.append(
            f"| {name} | {_ms(stats.median_ms)} | {_ms(eager)} | {_ms(compiled)} | "
            f"{_ratio(eager, stats.median_ms)} | {_ratio(compiled, stats.median_ms)} | {_ms(floor)} |"
        )
    return "\n".join(rows)


def report_section(inputs: PromptInputs, parent: ParentInfo) -> str:
    report = parent.report
    if report is None:
        return "Not evaluated yet."
    if report.ok:
        text = "Status: ok (correct on every check).\n" + timing_table(inputs, report)
        if report.flags:
            text += f"\nFlags: {', '.join(report.flags)}"
        return text
    lines = [f"Status: {report.status.value}" + (f" ({report.error_name})" if report.error_name else "")]
    if report.max_abs_error is not None:
        lines.append(f"Max abs error: {report.max_abs_error:.4g}")
    if report.flags:
        lines.append(f"Flags: {', '.join(report.flags)}")
    if report.feedback.strip():
        lines += ["Feedback from the harness:", "```text", _clip(report.feedback), "```"]
    return "\n".join(lines)


def parents_section(inputs: PromptInputs) -> str:
    blocks = []
    many = len(inputs.parents) > 1
    for index, parent in enumerate(inputs.parents, start=1):
        label = f"Parent {index}" if many else "Parent"
        head = f"## {label} ({title(parent.backend)}, id {parent.id})"
        blocks.append("\n".join([head, _fence(parent.source), report_section(inputs, parent)]))
    return "\n\n".join(blocks)


def sibling_section(sibling: SiblingInfo | None) -> str:
    if sibling is None:
        return ""
    lines = [
        f"## An earlier attempt from the same parent ({sibling.mode}, id {sibling.id}): {sibling.outcome}"
    ]
    if sibling.diff:
        lines += ["Its change against the parent:", "```diff", sibling.diff, "```"]
    lines.append("Learn from it: build on what worked, do not repeat what failed.")
    return "\n".join(lines)


def knowledge_section(docs: Sequence[RetrievedDoc]) -> str:
    if not docs:
        return ""
    parts = ["## Notes from the knowledge base"]
    for doc in docs:
        text = doc.text.strip()
        if len(text) > _DOC_CHARS:
            text = text[:_DOC_CHARS].rstrip() + " [...]"
        parts.append(f"### {doc.title}\n{text}")
    return "\n\n".join(parts)


# ------------------------------------------------------------------------------ building


def fill_template(template: str, **values: str) -> str:
    """string.Template substitution that drops a section line whose value is empty, together with
    the blank line after it, so absent sections leave no gaps (code inside values is untouched)."""
    kept: list[str] = []
    skip_blank = False
    for line in template.splitlines():
        stripped = line.strip()
        if skip_blank and not stripped:
            skip_blank = False
            continue
        skip_blank = False
        name = stripped[1:]
        if stripped.startswith("$") and name in values and not values[name].strip():
            skip_blank = True
            continue
        kept.append(line)
    return Template("\n".join(kept) + "\n").substitute(values)


def build_prompt(inputs: PromptInputs) -> Prompt:
    """Chat messages for one call; raises ValueError for an unknown mode or missing parents."""
    if inputs.mode not in MODES:
        raise ValueError(f"unknown prompt mode {inputs.mode!r}; valid: {', '.join(MODES)}")
    needed = {"generate": 0, "combine": 2}.get(inputs.mode, 1)
    if len(inputs.parents) < needed or (needed == 0 and inputs.parents):
        raise ValueError(f"mode {inputs.mode} needs {needed} parent(s), got {len(inputs.parents)}")
    if inputs.strict:
        work_rule = (
            f"- Do the computation in {title(inputs.backend)} kernels. PyTorch may allocate outputs "
            "(torch.empty...) and make views or reshapes, but must not compute the result (no torch.matmul, "
            "F.conv2d, torch.softmax... on the data path) and there is no fallback to PyTorch in try/except."
        )
    else:
        work_rule = f"- Do the heavy work in {title(inputs.backend)} kernels; PyTorch may be used for glue."
    system = Template(load_template("system")).substitute(
        backend_title=title(inputs.backend), platform_name=inputs.platform.name, work_rule=work_rule
    )
    source_backend = inputs.parents[0].backend if inputs.parents else inputs.backend
    answer = load_template("answer_edits" if inputs.mode in _EDIT_MODES else "answer_module").strip()
    guidance = (
        f"## {title(inputs.backend)} guidance\n{inputs.guidance.strip()}" if inputs.guidance.strip() else ""
    )
    user = fill_template(
        load_template(inputs.mode),
        backend_title=title(inputs.backend),
        source_backend_title=title(source_backend),
        problem=problem_section(inputs.spec, inputs.io),
        platform=platform_section(inputs.platform),
        parents=parents_section(inputs),
        diagnosis=inputs.diagnosis.statement if inputs.diagnosis else "none available",
        sibling=sibling_section(inputs.sibling),
        guidance=guidance,
        knowledge=knowledge_section(inputs.retrieved),
        answer_format=answer,
    )
    user = user.strip() + "\n"
    return Prompt(
        mode=inputs.mode,
        backend=inputs.backend,
        messages=({"role": "system", "content": system.strip() + "\n"}, {"role": "user", "content": user}),
        retrieved=tuple(doc.id for doc in inputs.retrieved),
        diagnosis=inputs.diagnosis,
    )


# ----------------------------------------------------------------------------- gathering

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
    for event in reversed(ctx.graph.events("baselines")):
        shapes = event.get("payload", event).get("shapes")
        if shapes:
            try:
                return {k: Baseline.from_json(v) for k, v in shapes.items()}
            except (KeyError, TypeError, ValueError):
                log.debug("unreadable baselines event", exc_info=True)
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
    query = " ".join([query, backend, spec.name, *spec.tags])
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
