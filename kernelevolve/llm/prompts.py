"""Prompts for the universal LLM operator, rebuilt for every call.

`build_prompt` turns a `PromptInputs` value (gathered from the search graph by
kernelevolve/llm/prompt_inputs.py) into chat messages with the mode's template
(kernelevolve/llm/templates/<mode>.txt, string.Template syntax). It is a pure function, which
is what the snapshot tests pin. The gathering names are re-exported here for callers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import TYPE_CHECKING

from kernelevolve.llm.diagnosis import Diagnosis
from kernelevolve.llm.memory import memory_section
from kernelevolve.llm.prompt_inputs import (
    ParentInfo,
    PromptInputs,
    RetrievedDoc,
    Retriever,
    backend_guidance,
    gather_inputs,
)
from kernelevolve.specs.traffic import IOSummary, peak_key
from kernelevolve.types import EvalReport, KernelSpec

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform

__all__ = [
    "MODES",
    "ParentInfo",
    "Prompt",
    "PromptInputs",
    "RetrievedDoc",
    "Retriever",
    "backend_guidance",
    "build_prompt",
    "fill_template",
    "gather_inputs",
    "knowledge_section",
    "load_template",
    "parents_section",
    "platform_section",
    "problem_section",
    "report_section",
    "timing_table",
    "title",
]

MODES = ("generate", "improve", "combine", "repair", "tune", "translate")
_EDIT_MODES = ("improve", "repair", "tune")  # a parent exists that edits can apply to
_TITLES = {"triton": "Triton", "cute": "CuTe DSL"}
_FEEDBACK_HEAD, _FEEDBACK_TAIL = 1500, 2500
_DOC_CHARS = 1500


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
        memory=memory_section(
            inputs.attempts, inputs.parents[0].id if inputs.parents else "", inputs.memory_tokens
        ),
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
