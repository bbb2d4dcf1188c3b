"""The problems furthest behind torch.compile in a sweep, with the facts that usually say why.

Issue 7 asks every sweep report for the ten problems furthest behind torch.compile and the reason. The
reason itself takes reading; this table puts beside each problem what it is usually found in: no kernel
at all (and the run's stop reason), torch.compile's own output outside the tolerance, eager at the
candidates' precision (exact fp32 convolutions against TF32 baselines), how many evaluations the budget
allowed, and which operator won. Problems with no correct kernel come first, then by speedup.
"""

from __future__ import annotations

from typing import Any

from kernelevolve.results.format import first_line, format_ms

FURTHEST_BEHIND = 10


def furthest_behind(records: list[dict[str, Any]], count: int = FURTHEST_BEHIND) -> list[dict[str, Any]]:
    """One row per problem furthest behind torch.compile: no correct kernel first, then lowest speedup."""
    candidates = [r for r in records if not r.get("correct") or r.get("speedup_vs_compile") is not None]

    def gap(record: dict[str, Any]) -> tuple[int, float]:
        if not record.get("correct"):
            return (0, 0.0)
        return (1, float(record["speedup_vs_compile"]))

    return [
        {
            "problem": r["problem"],
            "name": r.get("name", ""),
            "speedup_vs_compile": r.get("speedup_vs_compile") if r.get("correct") else None,
            "best_ms": r.get("best_ms"),
            "compile_ms": r.get("compile_ms"),
            "evaluations": r.get("evaluations") or 0,
            "facts": _facts(r),
        }
        for r in sorted(candidates, key=gap)[:count]
    ]


def _facts(record: dict[str, Any]) -> str:
    facts = []
    if not record.get("correct"):
        why = first_line(record.get("error") or record.get("stop_reason") or "")[:90]
        facts.append(f"{record.get('status')}" + (f": {why}" if why else ""))
    if record.get("compile_within_tolerance") is False:
        facts.append("torch.compile's output misses the tolerance")
    exact, best = record.get("eager_exact_ms"), record.get("best_ms")
    if exact and best:
        facts.append(f"eager at exact fp32 {format_ms(exact)} ms ({exact / best:.2f}x of it)")
    compiled_exact = record.get("compile_exact_ms")
    if compiled_exact and best:
        within = {True: "", False: ", its output misses the tolerance too", None: ""}
        facts.append(
            f"torch.compile at exact fp32 {format_ms(compiled_exact)} ms ({compiled_exact / best:.2f}x of it"
            f"{within[record.get('compile_exact_within_tolerance')]})"
        )
    graphs = record.get("compile_graphs_ms")
    if graphs and best:
        facts.append(f"torch.compile with CUDA graphs {format_ms(graphs)} ms ({graphs / best:.2f}x of it)")
    if record.get("correct") and record.get("winner_operator"):
        facts.append(f"won by {record['winner_operator']}")
    if record.get("correct") and record.get("winner_fp32_precision") == "tf32":
        facts.append("convolutions in one TF32 pass, as eager runs them")
    return "; ".join(facts)


def behind_lines(rows: list[dict[str, Any]] | None) -> list[str]:
    """The markdown table (nothing where no row has a torch.compile timing)."""
    if not rows or not any(r.get("compile_ms") for r in rows):
        return []
    lines = [
        f"## The {len(rows)} furthest behind torch.compile",
        "",
        "| problem | name | vs torch.compile | best ms | compile ms | evals | facts |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        speedup = r["speedup_vs_compile"]
        lines.append(
            f"| {r['problem']} | {r['name']} | {f'{speedup:.3g}x' if speedup is not None else '-'} | "
            f"{format_ms(r['best_ms'])} | {format_ms(r['compile_ms'])} | {r['evaluations']} | {r['facts']} |"
        )
    return [*lines, ""]
