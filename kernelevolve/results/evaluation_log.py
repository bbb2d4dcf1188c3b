"""A few hundred bytes per evaluated candidate, in evaluation order: what a sweep keeps of a run whose
directory stays on the GPU machine (results.json `evaluation_log`, a sweep record's `candidates`).

Every field is read from the graph as the run recorded it (candidate, metadata, report, fitness);
nothing is re-measured. Whether a kernel does all its work in our own kernels is given for correct
candidates only: `graph.best_strict` has classified those already (`own_kernels.kernel_use`, cached),
and a failed one's answer would cost a static check for nothing.
"""

from __future__ import annotations

import re
from typing import Any

from kernelevolve.eval.own_kernels import kernel_use
from kernelevolve.search.graph import Node, SearchGraph
from kernelevolve.types import Status

ID_CHARS = 10
FEEDBACK_CHARS = 200
_ITEMS = 6  # list and dict values keep this many entries
_TEXT_CHARS = 60  # string values of metadata
# Metadata that says what a candidate is, in the order it is shown: templates, fusion seeds, Inductor's
# captures (compiler_seed, rewrite_seed, fusion_boundary), tuning, graph replay, past wins, the LLM.
_WHAT = (
    "template",
    "pattern",
    "strategy",
    "own_kernels",
    "fp32_precision",
    "library_calls",
    "attention_as_matmuls",
    "kernels",
    "rewrites",
    "fusion_plans",
    "changed",
    "graph_replay",
    "model",
)
# the harness's stages under the device lock (on a GPU; the release of the runner and of memory too)
_LOCKED_STAGES = (
    "build",
    "correctness",
    "kernel_share",
    "reference",
    "timing",
    "timing_setup",
    "timed_checks",
    "release",
    "kill",
    "free_gc",
    "free_cache",
)
_DOTTED = re.compile(r"[A-Za-z_][\w.]*")
_CONTROL = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")


def evaluation_log(graph: SearchGraph) -> list[dict[str, Any]]:
    """One entry per evaluated candidate, in the order its report arrived."""
    return [entry(node) for node in graph.evaluated_in_order()]


def entry(node: Node) -> dict[str, Any]:
    """The compact facts of one evaluated node; keys without a value are left out."""
    report, candidate = node.report, node.candidate
    assert report is not None, f"{node.id} has no report"
    failed = report.status is not Status.OK
    latency = list(report.latency.values())
    out: dict[str, Any] = {
        "id": node.id[:ID_CHARS],
        "operator": candidate.operator,
        "mode": candidate.mode,
        "parent": candidate.parent_ids[0][:ID_CHARS] if candidate.parent_ids else None,
        "backend": candidate.backend,
        "status": report.status.value,
        "error_name": report.error_name if failed else None,
        # summed over shapes, as a sweep record's best_ms is
        "median_ms": _round(sum(t.median_ms for t in latency)) if latency else None,
        "mean_ms": _round(sum(t.mean_ms for t in latency)) if latency else None,
        "speedup_vs_eager": _round(node.fitness.objective) if node.feasible and node.fitness else None,
        "what": what(candidate.metadata),
        "flags": list(report.flags),
        "eval_s": round(report.wall_s, 2),
        # the GPU's share of it (correctness and timing under the device lock) and the wait for the lock,
        # and how the timing went: what throughput analyses read when run directories stay on the device
        "locked_s": _round_s(sum(report.phase_s.get(stage, 0.0) for stage in _LOCKED_STAGES)),
        "wait_s": _round_s(report.phase_s.get("device_wait", 0.0)),
        # every stage of this evaluation that took 10 ms or more: what a sweep's stage sums hide
        "stages_s": {k: round(v, 3) for k, v in report.phase_s.items() if v >= 0.01},
        "timed_calls": sum(t.trials for t in latency) if latency else None,
        # the judge's wall clock per finished call, summed over shapes: the runner's median cross-checked
        "wall_ms": _round(sum(t.wall_ms for t in latency if t.wall_ms))
        if any(t.wall_ms for t in latency)
        else None,
        "stopped_by": ",".join(sorted({t.stopped_by for t in latency if t.stopped_by})),
        "feedback": feedback_excerpt(report.feedback, report.error_name) if failed else None,
    }
    if node.feasible:
        use = kernel_use(candidate)
        out["own_kernels_only"], out["uses_library"] = use.own_kernels_only, use.uses_library
    return {k: v for k, v in out.items() if v is not None and v != [] and v != {} and v != ""}


def _round_s(seconds: float) -> float | None:
    """Seconds to 0.01 s; None (left out) where none were spent."""
    return round(seconds, 2) if seconds >= 0.005 else None


def what(metadata: dict[str, Any]) -> dict[str, Any]:
    """The metadata that identifies a candidate, each value cut short."""
    out = {key: _compact(metadata[key]) for key in _WHAT if metadata.get(key) not in (None, "", [], {})}
    if metadata.get("source") == "inductor":  # a capture of Inductor's program, or a child of one
        out["layout_optimization"] = metadata.get("layout_optimization", True) is not False
        out["own_kernels"] = bool(metadata.get("own_kernels"))
        config = metadata.get("inductor_config") or {}
        if config and not metadata.get("fusion_plans"):
            out["inductor_config"] = _compact(sorted(config))
    past = metadata.get("past_win")
    if isinstance(past, dict):
        out["past_win"] = _compact(past.get("spec_name"))
    return out


def feedback_excerpt(feedback: str, error_name: str = "", limit: int = FEEDBACK_CHARS) -> str:
    """One line: the feedback's first line and, where a traceback follows it ("running ModelNew raised X:"
    then frames), the exception's own line ("X: message"), cut at `limit` characters; then, for a device
    out-of-memory error, who held the memory (`device_memory_holders`), which a sweep's record would
    otherwise lose with the rest of the message."""
    lines = [line.strip() for line in _CONTROL.sub("", feedback).splitlines() if line.strip()]
    if not lines:
        return ""
    text = lines[0]
    exception = next((line for line in reversed(lines[1:]) if _is_exception_line(line, error_name)), None)
    if exception is not None:
        text = f"{text} ... {exception}"
    excerpt = text if len(text) <= limit else text[: limit - 3] + "..."
    holders = device_memory_holders(feedback)
    return f"{excerpt} [{holders}]" if holders else excerpt


_SIZE = r"([\d.]+ [KMGT]?i?B)"
_ASKED = re.compile(rf"Tried to allocate {_SIZE}")
_FREE = re.compile(rf"total capacity of {_SIZE} of which {_SIZE} is free")
_THIS_PROCESS = re.compile(rf"this process has {_SIZE} memory in use")
_OTHER_PROCESS = re.compile(rf"Process (\d+) has {_SIZE} memory in use")
_PYTORCH_SHARE = re.compile(rf"{_SIZE} is allocated by PyTorch, and {_SIZE} is reserved")


def device_memory_holders(feedback: str) -> str:
    """PyTorch's out-of-memory message condensed ("asked 8.00 GiB; free 4.57 GiB of 139.80 GiB; this process
    116.10 GiB (PyTorch 114.02 GiB allocated, 1.49 GiB cached); process 842 18.60 GiB"), or "" where the
    feedback holds none."""
    asked, free = _ASKED.search(feedback), _FREE.search(feedback)
    if asked is None or free is None:
        return ""
    parts = [f"asked {asked[1]}", f"free {free[2]} of {free[1]}"]
    this, share = _THIS_PROCESS.search(feedback), _PYTORCH_SHARE.search(feedback)
    if this is not None:
        parts.append(
            f"this process {this[1]}"
            + (f" (PyTorch {share[1]} allocated, {share[2]} cached)" if share else "")
        )
    parts += [f"process {pid} {size}" for pid, size in _OTHER_PROCESS.findall(feedback)[:_ITEMS]]
    return "; ".join(parts)


def _is_exception_line(line: str, error_name: str) -> bool:
    """`NameError: name 'x' is not defined`, `triton.runtime.errors.OutOfResources: ...`: a dotted name
    that is an error's, then a colon (a frame, `File "..."`, or a source line is not)."""
    name = line.split(":", 1)[0]
    if ":" not in line or not _DOTTED.fullmatch(name):
        return False
    short = name.rsplit(".", 1)[-1]
    return short.endswith(("Error", "Exception")) or (bool(error_name) and short == error_name)


def _round(value: float) -> float:
    return float(f"{value:.4g}")


def _compact(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= _TEXT_CHARS else value[: _TEXT_CHARS - 3] + "..."
    if isinstance(value, float):
        return _round(value)
    if isinstance(value, (list, tuple)):
        return [_compact(v) for v in value[:_ITEMS]] + (
            [f"+{len(value) - _ITEMS}"] if len(value) > _ITEMS else []
        )
    if isinstance(value, dict):
        items = list(value.items())
        kept = {str(k): _compact(v) for k, v in items[:_ITEMS]}
        if len(items) > _ITEMS:
            kept["..."] = len(items) - _ITEMS
        return kept
    if value is None or isinstance(value, (bool, int)):
        return value
    return _compact(str(value))
