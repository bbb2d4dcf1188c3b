"""Print the candidates a sweep evaluated for some of its problems, from their records alone.

    python -m kernelevolve.bench.sweep.candidates SWEEP_DIR L2/14 [L1/64 ...]

Each record (`SWEEP_DIR/results/L2_014.json`) carries one compact entry per evaluated candidate, in
evaluation order (`kernelevolve.results.evaluation_log`): which operator made it, its status, time, what it
is, and a line of feedback for a failure. Records written before that have no list; they are shown
with their totals only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from kernelevolve.bench.sweep.run import record_key, record_slug
from kernelevolve.bench.sweep.summary import RESULTS_DIR
from kernelevolve.results.format import format_ms, format_own, format_speedup

_KEY = re.compile(r"(?i)^l?(\d+)[/_](\d+)$")
# Shorter names for the table's "what" column.
_LABELS = {
    "layout_optimization": "layout_opt",
    "attention_as_matmuls": "attn_mm",
    "fp32_precision": "fp32",
    "own_kernels": "own",
}


class UnknownProblem(LookupError):
    """A problem with no record in the sweep folder; the message says what there is."""


def parse_key(text: str) -> tuple[int, int]:
    """(level, id) of "L2/14", "l2/14", "2/14" or "L2_014": (2, 14)."""
    match = _KEY.match(text.strip())
    if not match:
        raise UnknownProblem(f"{text!r} is not a problem: write it as L<level>/<id>, e.g. L2/14")
    return int(match.group(1)), int(match.group(2))


def load_record(sweep_dir: Path, key: str) -> dict[str, Any]:
    level, pid = parse_key(key)
    results = sweep_dir / RESULTS_DIR
    path = results / f"{record_slug(level, pid)}.json"
    if not path.is_file():
        if not results.is_dir():
            raise UnknownProblem(f"{sweep_dir} is not a sweep folder: it has no {RESULTS_DIR}/ directory")
        known = sorted(p.stem for p in results.glob("*.json"))
        same_level = [record_key(*parse_key(stem)) for stem in known if stem.startswith(f"L{level}_")]
        raise UnknownProblem(
            f"{record_key(level, pid)}: no record in {results} ({len(known)} record(s); level {level}: "
            + (
                ", ".join(same_level[:20]) + (" ..." if len(same_level) > 20 else "")
                if same_level
                else "none"
            )
            + ")"
        )
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def candidate_table(record: dict[str, Any]) -> str:
    """A problem's header (status, totals, baselines, winner) and its candidates, one row each."""
    by_status = ", ".join(f"{k} {v}" for k, v in (record.get("evaluations_by_status") or {}).items())
    lines = [
        f"{record.get('problem', '?')} {record.get('name', '')}: {record.get('status', '?')}, "
        f"{record.get('evaluations', 0)} evaluation(s)"
        + (f" ({by_status})" if by_status else "")
        + (f", stopped: {record['stop_reason']}" if record.get("stop_reason") else ""),
        f"eager {format_ms(record.get('eager_ms'))} ms, compile {format_ms(record.get('compile_ms'))} ms"
        + (
            f", eager exact fp32 {format_ms(record['eager_exact_ms'])} ms"
            if record.get("eager_exact_ms")
            else ""
        )
        + (
            f"; best {format_ms(record.get('best_ms'))} ms ({format_speedup(record.get('speedup_vs_eager'))} "
            f"vs eager) by {record.get('winner_operator')} ({record.get('winner_backend')})"
            if record.get("correct")
            else ""
        ),
    ]
    if record.get("error"):
        lines.append(f"error: {str(record['error']).strip().splitlines()[0][:200]}")
    candidates = record.get("candidates")
    if candidates is None:
        lines.append("no candidate list in this record (written before records carried one)")
        return "\n".join(lines)
    if not candidates:
        lines.append("no candidate was evaluated")
        return "\n".join(lines)
    header = (
        f"{'#':>3}  {'id':<10}  {'operator/mode':<26}  {'backend':<7}  {'status':<15}  {'ms':>8}  "
        f"{'mean ms':>8}  {'vs eager':>8}  {'own':>3}  {'eval s':>6}  what"
    )
    lines += [header, "-" * len(header)]
    for n, entry in enumerate(candidates, start=1):
        lines.append(
            f"{n:>3}  {entry.get('id', '?'):<10}  {entry.get('operator', '?') + '/' + entry.get('mode', '?'):<26}  "
            f"{entry.get('backend', '?'):<7}  {entry.get('status', '?'):<15}  {format_ms(entry.get('median_ms')):>8}  "
            f"{format_ms(entry.get('mean_ms')):>8}  {format_speedup(entry.get('speedup_vs_eager')):>8}  "
            f"{format_own(entry.get('own_kernels_only')):>3}  {entry.get('eval_s', 0):>6.2f}  {describe(entry)}"
        )
        if entry.get("feedback") or entry.get("error_name"):
            named = f"{entry['error_name']}: " if entry.get("error_name") else ""
            lines.append(f"{'':>5}{named}{entry.get('feedback', '')}")
    return "\n".join(lines)


def describe(entry: dict[str, Any]) -> str:
    """The "what" column: parent, metadata and flags as short key=value items."""
    items = [f"from {entry['parent']}"] if entry.get("parent") else []
    for key, value in (entry.get("what") or {}).items():
        items.append(f"{_LABELS.get(key, key)}={_text(value)}")
    items += [f"flag {flag}" for flag in entry.get("flags") or []]
    return " ".join(items) or "-"


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict):
        return ",".join(f"{k}:{_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ",".join(_text(v) for v in value) or "[]"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernelevolve.bench.sweep.candidates", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("sweep_dir", type=Path, help="the sweep's --out folder")
    parser.add_argument("problems", nargs="+", help="problems as L<level>/<id>, e.g. L2/14 L1/64")
    args = parser.parse_args(argv)
    status = 0
    for n, key in enumerate(args.problems):
        try:
            text = candidate_table(load_record(args.sweep_dir, key))
        except (UnknownProblem, OSError, json.JSONDecodeError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 2
            continue
        print(("\n" if n else "") + text)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
