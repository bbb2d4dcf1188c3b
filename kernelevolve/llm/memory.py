"""Memory of attempts: what a prompt's lineage has already tried, read from the search graph.

An attempt is a child of a node in the lineage (the parent and its first-parent ancestors), made by
any operator, or a reply that never became a node (a repeat of an earlier kernel, a reply without
usable code). Those rejected replies are graph events (`ATTEMPT_EVENT`), so they survive a resume
and the prompt stays a function of what the search knows. `memory_section` renders the most recent
attempts, each with what changed, its outcome and its timing against its parent, within a token
budget.

`source_key` is the identity used to spot a repeat: the source's syntax tree, so a reply that only
reformats or re-comments an earlier kernel is the same attempt.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernelevolve.llm.diagnosis import telling_line
from kernelevolve.types import normalise_source

if TYPE_CHECKING:
    from kernelevolve.search.graph import Node, SearchGraph

ATTEMPT_EVENT = "llm_attempt"
LINEAGE_DEPTH = 3  # the parent, its parent and grandparent: their children are the lineage's attempts
_DIFF_LINES = 12
_OUTCOMES = {
    "duplicate": "repeated {repeats} (same code); not evaluated again",
    "unchanged": "returned its parent unchanged; not evaluated",
    "no_code": "a reply without code",
    "refusal": "a refusal, no code",
    "truncated": "cut off at the token limit before the code was complete",
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")

_keys: dict[str, str] = {}  # candidate id -> source_key (a pure function of the source: shared)
_keys_lock = threading.Lock()


def source_key(source: str) -> str:
    """Identity of a kernel up to formatting and comments (its syntax tree); the normalised text
    where it does not parse."""
    try:
        text = ast.unparse(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError):
        text = normalise_source(source)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def known_sources(graph: SearchGraph) -> dict[str, str]:
    """source_key -> id of the first node with that source."""
    found: dict[str, str] = {}
    for node in graph.nodes():
        with _keys_lock:
            key = _keys.get(node.id)
        if key is None:
            key = source_key(node.candidate.source)
            with _keys_lock:
                _keys[node.id] = key
        found.setdefault(key, node.id)
    return found


def idea_of(reply: str) -> str:
    """The reply's own one-line account of its change: the first sentence of the prose before its code."""
    head = re.split(r"^[ \t]*(?:```|~~~|<{5,9}[ \t]*SEARCH)", reply, maxsplit=1, flags=re.MULTILINE)[0]
    head = re.sub(r"<think>.*?</think>", "", head, flags=re.DOTALL | re.IGNORECASE)
    text = " ".join(head.split())
    if not text:
        return ""
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    return first if len(first) <= 160 else first[:157] + "..."


@dataclass(frozen=True)
class Attempt:
    ref: str  # node id, or "a reply" for one that never became a node
    mode: str
    operator: str
    parent: str  # "" for a first kernel
    idea: str
    outcome: str
    diff: str  # changed lines against the parent, "" when not shown
    recency: float  # larger is later


def record_rejected(
    graph: SearchGraph,
    *,
    kind: str,
    reason: str,
    prompt_id: str,
    sample: int,
    mode: str,
    parent_ids: Sequence[str],
    idea: str = "",
    repeats: str = "",
) -> None:
    """A reply that did not become a node, as a graph event (kept in the checkpoint)."""
    payload = {
        "kind": kind,
        "reason": reason,
        "prompt_id": prompt_id,
        "sample": sample,
        "mode": mode,
        "parent_ids": list(parent_ids),
        "idea": idea,
        "repeats": repeats,
        "after": len(graph),  # nodes that existed then: places it among them for "most recent"
    }
    graph.record_event(ATTEMPT_EVENT, payload)


def samples_used(graph: SearchGraph, prompt_id: str) -> set[int]:
    """Sample numbers of `prompt_id` whose replies the graph already holds (as nodes or events)."""
    used = {
        int(node.candidate.metadata.get("sample", 0))
        for node in graph.nodes()
        if node.candidate.metadata.get("prompt_id") == prompt_id
    }
    used.update(
        int(e["payload"].get("sample", 0))
        for e in graph.events(ATTEMPT_EVENT)
        if e["payload"].get("prompt_id") == prompt_id
    )
    return used


def _lineage(graph: SearchGraph, parent_ids: Sequence[str]) -> list[str]:
    chain: list[str] = []
    current = parent_ids[0] if parent_ids else None
    while current is not None and current in graph and len(chain) < LINEAGE_DEPTH:
        chain.append(current)
        parents = graph.parents(current)
        current = parents[0] if parents else None
    return chain


def _changed_lines(parent: str, child: str) -> str:
    lines = [
        line
        for line in difflib.unified_diff(parent.splitlines(), child.splitlines(), n=0, lineterm="")
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    if len(lines) > _DIFF_LINES:
        lines = lines[:_DIFF_LINES] + [f"... ({len(lines) - _DIFF_LINES} more changed lines)"]
    return "\n".join(lines)


def _node_outcome(graph: SearchGraph, node: Node) -> str:
    report = node.report
    if report is None:
        return "being evaluated"
    if report.ok and node.fitness is not None and node.fitness.feasible:
        text = f"ok, {node.fitness.objective:.2f}x eager"
        parents = [graph.node(p) for p in graph.parents(node.id)]
        best = max((p.fitness.objective for p in parents if p.feasible and p.fitness), default=0.0)
        return text + (f", {node.fitness.objective / best:.2f}x its parent" if best > 0 else "")
    detail = telling_line(report.feedback, 160)
    return (
        report.status.value
        + (f" ({report.error_name})" if report.error_name else "")
        + (f": {detail}" if detail else "")
    )


def recall(graph: SearchGraph, parent_ids: Sequence[str], mode: str) -> tuple[Attempt, ...]:
    """The lineage's attempts, most recent first. A first kernel's lineage is the other first
    kernels the LLM wrote."""
    chain = _lineage(graph, parent_ids)
    if chain:  # children of the lineage's nodes through their first parent (the parent among them)
        ids = [c for p in chain for c in graph.children(p) if graph.node(c).candidate.parent_ids[0] == p]
    else:
        ids = [n.id for n in graph.nodes() if not n.candidate.parent_ids and n.candidate.operator == "llm"]
    attempts: list[Attempt] = []
    for node_id in dict.fromkeys(ids):
        node = graph.node(node_id)
        first_parent = node.candidate.parent_ids[0] if node.candidate.parent_ids else ""
        diff = ""
        if chain and first_parent == chain[0]:
            diff = _changed_lines(graph.node(first_parent).candidate.source, node.candidate.source)
        attempts.append(
            Attempt(
                ref=node.id,
                mode=node.candidate.mode,
                operator=node.candidate.operator,
                parent=first_parent,
                idea=str(node.candidate.metadata.get("idea", "")),
                outcome=_node_outcome(graph, node),
                diff=diff,
                recency=float(node.order),
            )
        )
    for event in graph.events(ATTEMPT_EVENT):
        payload: dict[str, Any] = event["payload"]
        parents = payload.get("parent_ids") or []
        if (parents[0] not in chain) if parents else bool(chain):
            continue  # another lineage's reply
        kind = str(payload.get("kind", ""))
        outcome = _OUTCOMES.get(kind, "unusable: {reason}").format(
            repeats=payload.get("repeats", ""), reason=payload.get("reason", "")
        )
        attempts.append(
            Attempt(
                ref="a reply",
                mode=str(payload.get("mode", "")),
                operator="llm",
                parent=parents[0] if parents else "",
                idea=str(payload.get("idea", "")),
                outcome=outcome,
                diff="",
                recency=float(payload.get("after", 0)) - 0.5,
            )
        )
    attempts.sort(key=lambda a: a.recency, reverse=True)
    return tuple(attempts)


def _entry(attempt: Attempt, parent_id: str, with_diff: bool) -> str:
    what = attempt.mode if attempt.operator == "llm" else f"{attempt.operator}/{attempt.mode}"
    if attempt.ref == parent_id:
        head = f"- {attempt.ref} (the parent above; {what})"
    elif attempt.parent:
        via = "this parent" if attempt.parent == parent_id else attempt.parent
        head = f"- {attempt.ref} ({what} of {via})"
    else:
        head = f"- {attempt.ref} ({what})"
    text = f"{head}: {attempt.outcome}."
    if attempt.idea:
        text += f' Idea: "{attempt.idea}"'
    if with_diff and attempt.diff:
        text += "\n  ```diff\n" + "\n".join(f"  {line}" for line in attempt.diff.splitlines()) + "\n  ```"
    return text


def memory_section(attempts: Sequence[Attempt], parent_id: str, budget_tokens: int) -> str:
    """The attempts as prompt text, most recent first, within about `budget_tokens` (4 characters a
    token); "" when there are none or the budget is 0."""
    if not attempts or budget_tokens <= 0:
        return ""
    head = "## Attempts so far in this lineage (most recent first)"
    tail = (
        "Do not repeat an attempt listed here: build on what worked, avoid the cause of what failed, "
        "and try something different from the repeats."
    )
    budget = budget_tokens * 4 - len(head) - len(tail)
    lines: list[str] = []
    for index, attempt in enumerate(attempts):
        entry = _entry(attempt, parent_id, with_diff=True)
        if len(entry) > budget:
            entry = _entry(attempt, parent_id, with_diff=False)
        if len(entry) > budget:
            lines.append(f"({len(attempts) - index} earlier attempt(s) not shown)")
            break
        lines.append(entry)
        budget -= len(entry) + 1
    return "\n".join([head, *lines, tail])
