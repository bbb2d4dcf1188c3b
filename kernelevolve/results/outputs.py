"""What a run leaves behind: best/ (kernel + loader), results.json, and the summary table."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any

from kernelevolve.eval.own_kernels import kernel_use
from kernelevolve.results.evaluation_log import evaluation_log
from kernelevolve.results.format import first_line, format_speedup
from kernelevolve.results.versions import versions
from kernelevolve.search.fitness import VERIFIED_FLAG, score
from kernelevolve.search.graph import Node, SearchGraph, best_strict
from kernelevolve.specs.input_distributions import distribution_outcomes, failed_distributions
from kernelevolve.types import Baseline, EvalReport, FitnessValue, KernelSpec, Status, TimingStats

_LOADER = '''"""Load the kernel that kernelevolve found: `ModelNew = load()` then use it like the reference Model."""

import importlib.util
from pathlib import Path


def load():
    path = Path(__file__).with_name("kernel.py")
    spec = importlib.util.spec_from_file_location("kernelevolve_best_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ModelNew
'''


def write_best(run_dir: Path, node: Node, spec: KernelSpec, platform: str) -> Path:
    best_dir = run_dir / "best"
    best_dir.mkdir(parents=True, exist_ok=True)
    fitness = node.fitness
    header = (
        f"# kernelevolve best kernel for spec {spec.name!r} on {platform}\n"
        f"# candidate {node.id} ({node.candidate.backend}, operator {node.candidate.operator}, "
        f"mode {node.candidate.mode})\n"
        f"# geomean speedup vs eager: {fitness.objective:.3f}x"
        + (
            f", vs torch.compile: {fitness.speedup_vs_compile:.3f}x"
            if fitness and fitness.speedup_vs_compile
            else ""
        )
        + "\n"
        if fitness
        else ""
    )
    kernel = best_dir / "kernel.py"
    kernel.write_text(header + node.candidate.source)
    (best_dir / "load.py").write_text(_LOADER)
    return kernel


def shape_rows(
    node: Node | None, baselines: dict[str, Baseline], latency: dict[str, TimingStats] | None = None
) -> list[dict[str, Any]]:
    """One row per baseline shape: the node's time (`latency` where given: its confirmation's) beside the
    baselines, and the baselines' own accuracy."""
    if latency is None:
        latency = node.report.latency if node and node.report else {}
    rows = []
    for shape, baseline in baselines.items():
        timing = latency.get(shape)
        compiled = baseline.compiled.median_ms if baseline.compiled else None
        exact = baseline.eager_exact.median_ms if baseline.eager_exact else None
        compiled_exact = baseline.compiled_exact.median_ms if baseline.compiled_exact else None
        graphs = baseline.compiled_graphs.median_ms if baseline.compiled_graphs else None
        rows.append(
            {
                "shape": shape,
                "best_ms": timing.median_ms if timing else None,
                "eager_ms": baseline.eager.median_ms,
                "compile_ms": compiled,
                "speedup_vs_eager": baseline.eager.median_ms / timing.median_ms if timing else None,
                "speedup_vs_compile": compiled / timing.median_ms if timing and compiled else None,
                "eager_exact_ms": exact,
                "speedup_vs_eager_exact": exact / timing.median_ms if timing and exact else None,
                # the baselines' own outputs against the spec's tolerance (None: not checked)
                "eager_within_tolerance": baseline.eager_within_tolerance,
                "compile_within_tolerance": baseline.compiled_within_tolerance,
                "compile_max_error": baseline.compiled_max_error,
                # torch.compile with exact fp32 convolutions, where its default output misses the tolerance
                "compile_exact_ms": compiled_exact,
                "speedup_vs_compile_exact": compiled_exact / timing.median_ms
                if timing and compiled_exact
                else None,
                "compile_exact_within_tolerance": baseline.compiled_exact_within_tolerance,
                # torch.compile with CUDA graphs, where the default one's time is host-bound
                "compile_graphs_ms": graphs,
                "speedup_vs_compile_graphs": graphs / timing.median_ms if timing and graphs else None,
            }
        )
    return rows


def build_results(
    *,
    spec: KernelSpec,
    platform: str,
    graph: SearchGraph,
    baselines: dict[str, Baseline],
    stop_reason: str,
    elapsed_s: float,
    evaluations_this_session: int,
    extra: dict[str, Any] | None = None,
    confirmations: dict[str, EvalReport] | None = None,
    winners: tuple[Node | None, Node | None] | None = None,
) -> dict[str, Any]:
    """results.json's content. `confirmations` (node id -> report): winners evaluated once more with every
    timed call (`app.confirm_winners`); where one passed, its times and speedups are the ones reported.
    `winners`: the best and the best with own kernels only as the confirmations chose them
    (`winners.reported_winner`); by default the search's."""
    confirmations = confirmations or {}
    best, strict = winners if winners is not None else (graph.best(), best_strict(graph))
    evaluated = graph.evaluated()
    statuses = Counter(node.report.status.value for node in evaluated if node.report)
    by_operator: dict[str, Counter[str]] = {}
    for node in evaluated:
        if node.report:
            by_operator.setdefault(node.candidate.operator, Counter())[node.report.status.value] += 1
    results: dict[str, Any] = {
        "spec": {
            "name": spec.name,
            "key": spec.key,
            "origin": spec.origin,
            "dtype": spec.dtype,
            "atol": spec.atol,
            "rtol": spec.rtol,
            "shapes": [s.to_json() for s in spec.shapes],
            "scaling": spec.scaling,
            "input_distributions": list(spec.input_distributions),
        },
        "platform": platform,
        "stop_reason": stop_reason,
        "evaluations": len(evaluated),
        "evaluations_this_session": evaluations_this_session,
        "candidates": len(graph),
        "evaluations_by_status": {s.value: statuses.get(s.value, 0) for s in Status},
        "evaluations_by_operator": {op: dict(c) for op, c in sorted(by_operator.items())},
        "time": {
            "wall_s": elapsed_s,
            "evaluation_s": sum(node.report.wall_s for node in evaluated if node.report),
        },
        "baselines": {k: v.to_json() for k, v in baselines.items()},
        "versions": versions(),
        "best": None,
    }
    if best is not None and best.fitness is not None and best.report is not None:
        results["best"] = _node_summary(best, baselines, confirmations.get(best.id))
    # In a permissive run `best` may call PyTorch's libraries; this is the best that a strict run
    # would have accepted (the same node in a strict run).
    results["best_strict"] = (
        _node_summary(strict, baselines, confirmations.get(strict.id)) if strict is not None else None
    )
    # Winners whose confirmation found them wrong on an input distribution (app.confirm_winners): never
    # reported as a best, kept here with their confirmations.
    rejected = [node_id for node_id, report in confirmations.items() if failed_distributions(report.flags)]
    results["rejected_winners"] = [
        _node_summary(graph.node(node_id), baselines, confirmations[node_id])
        for node_id in rejected
        if node_id in graph.digraph and graph.node(node_id).fitness and graph.node(node_id).report
    ]
    # The best verified kernel of each backend, so a CuTe winner is visible beside the Triton one.
    by_backend: dict[str, Node] = {}
    for node in graph.top(len(graph)):  # feasible nodes, best first
        if node.id not in rejected:
            by_backend.setdefault(node.candidate.backend, node)
    results["best_by_backend"] = {
        backend: _node_summary(node, baselines, confirmations.get(node.id))
        for backend, node in sorted(by_backend.items())
    }
    # After best_strict, which has classified every correct node's kernel use (cached) for the log.
    results["evaluation_log"] = evaluation_log(graph)
    stages: Counter[str] = Counter()
    for node in evaluated:
        if node.report:
            stages.update(node.report.phase_s)
    results["time"]["evaluation_stages_s"] = {k: round(v, 3) for k, v in sorted(stages.items())}
    if extra:
        results.update(extra)
    for name, report in (results.get("operators") or {}).items():
        if isinstance(report, dict) and isinstance(report.get("accounting"), dict):
            report["per_evaluation"] = llm_per_evaluation(results, name, report["accounting"])
    return results


def llm_per_evaluation(results: dict[str, Any], operator: str, accounting: dict[str, Any]) -> dict[str, Any]:
    """An LLM operator's calls and tokens per evaluated candidate of the run (every session), and per
    evaluated candidate it made itself."""
    calls = int(accounting.get("calls", 0))
    tokens = int(accounting.get("prompt_tokens", 0)) + int(accounting.get("completion_tokens", 0))
    evaluations = int(results.get("evaluations", 0))
    own = sum((results.get("evaluations_by_operator") or {}).get(operator, {}).values())

    def per(amount: int, count: int) -> float | None:
        return round(amount / count, 3) if count else None

    return {
        "evaluations": evaluations,
        "own_evaluations": own,
        "calls": per(calls, evaluations),
        "tokens": per(tokens, evaluations),
        "calls_per_own_evaluation": per(calls, own),
        "tokens_per_own_evaluation": per(tokens, own),
    }


def _node_summary(
    node: Node, baselines: dict[str, Baseline], confirmation: EvalReport | None = None
) -> dict[str, Any]:
    """A winner as results.json reports it: with its confirmation's times and speedups where that passed,
    the search's own kept under `search`."""
    assert node.fitness is not None and node.report is not None
    use = kernel_use(node.candidate)
    confirmed = confirmed_fitness(node, baselines, confirmation)
    fitness = confirmed or node.fitness
    return {
        "id": node.id,
        "backend": node.candidate.backend,
        "operator": node.candidate.operator,
        "mode": node.candidate.mode,
        "own_kernels_only": use.own_kernels_only,
        "uses_library": use.uses_library,
        "metadata": node.candidate.metadata,
        "speedup_vs_eager": fitness.objective,
        "speedup_vs_compile": fitness.speedup_vs_compile,
        "max_abs_error": node.report.max_abs_error,
        # the search's flags, and any input distribution its confirmation found it wrong on
        "flags": list(node.report.flags)
        + [f for f in (confirmation.flags if confirmation else ()) if f.startswith("failed_distribution:")],
        "shapes": shape_rows(node, baselines, confirmation.latency if confirmed and confirmation else None),
        "search": {
            "speedup_vs_eager": node.fitness.objective,
            "speedup_vs_compile": node.fitness.speedup_vs_compile,
            "median_ms": {shape: t.median_ms for shape, t in node.report.latency.items()},
        },
        "confirmation": _confirmation_summary(confirmation, confirmed is not None),
    }


def confirmed_fitness(
    node: Node, baselines: dict[str, Baseline], confirmation: EvalReport | None
) -> FitnessValue | None:
    """The fitness of a passing confirmation (None where there is none, or it failed). A winner verified
    on a fresh worker for an excessive speedup stays verified in its confirmation."""
    if confirmation is None or not confirmation.ok or node.report is None:
        return None
    flags = confirmation.flags
    if VERIFIED_FLAG in node.report.flags and VERIFIED_FLAG not in flags:
        flags = (*flags, VERIFIED_FLAG)
    fitness = score(dataclasses.replace(confirmation, flags=flags), baselines)
    return fitness if fitness.feasible else None


def _confirmation_summary(confirmation: EvalReport | None, used: bool) -> dict[str, Any] | None:
    if confirmation is None:
        return None
    return {
        "status": confirmation.status.value,
        "used": used,  # its times are the reported ones
        "timed_calls": {shape: t.trials for shape, t in confirmation.latency.items()},
        "max_abs_error": confirmation.max_abs_error,
        "feedback": first_line(confirmation.feedback) if not confirmation.ok else "",
        # distribution name -> passed / failed / unchecked, for the checks on other inputs
        "input_distributions": distribution_outcomes(confirmation.flags),
    }


def write_results(run_dir: Path, results: dict[str, Any]) -> Path:
    path = run_dir / "results.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=2, default=str))
    tmp.replace(path)
    return path


def _ms(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else "-"


def _x(value: float | None) -> str:
    return format_speedup(value)  # 0.0037x, not 0.00x


def _share(value: float | None) -> str:
    return f"{100 * value:.0f}%" if value is not None else "-"


def _confirmation_line(entry: dict[str, Any]) -> str:
    """What the winner's confirmation said ("" where it had none: results from before confirmations)."""
    confirmation = entry.get("confirmation")
    if not confirmation:
        return ""
    search = entry.get("search") or {}
    if confirmation["used"]:
        calls = sorted(set(confirmation["timed_calls"].values()))
        passed = [n for n, o in (confirmation.get("input_distributions") or {}).items() if o == "passed"]
        return (
            f"confirmed: checked and timed again with {', '.join(map(str, calls))} timed calls (no settling); "
            f"the search had measured {_x(search.get('speedup_vs_eager'))} vs eager"
            + (f"; also correct on {', '.join(passed)} inputs" if passed else "")
        )
    return (
        f"warning: the best failed its confirmation ({confirmation['status']}: {confirmation['feedback']}); "
        "its times are the search's"
    )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind.replace('_', ' ')} {n}" for kind, n in sorted(counts.items()) if n) or "none"


def llm_health_lines(results: dict[str, Any]) -> list[str]:
    """The endpoint's health for each LLM operator: calls, failures by kind, latency, economy."""
    lines = []
    for name, report in sorted((results.get("operators") or {}).items()):
        accounting = report.get("accounting") if isinstance(report, dict) else None
        if not isinstance(accounting, dict):
            continue
        per = report.get("per_evaluation") or {}
        latency = accounting.get("mean_latency_s")
        replies = {k: v for k, v in (accounting.get("replies_by_kind") or {}).items() if k != "new"}
        lines.append(
            f"{name} endpoint {report.get('model', '?')} at {report.get('base_url', '?')}: "
            f"{accounting.get('calls', 0)} calls ({(accounting.get('this_session') or {}).get('calls', 0)} "
            f"this session), {accounting.get('prompt_tokens', 0) + accounting.get('completion_tokens', 0)} "
            f"tokens, ${accounting.get('cost_usd', 0.0):.4f}; "
            + (f"mean latency {latency:.2f} s; " if latency is not None else "")
            + f"{per.get('calls') if per.get('calls') is not None else '-'} calls per evaluation"
        )
        lines.append(
            f"{name} failures: endpoint {_counts(accounting.get('failures_by_kind') or {})}; "
            f"replies without a new kernel {_counts(replies)}"
        )
        if (report.get("replies") or {}).get("prose_only"):
            lines.append(f"warning: {name}'s endpoint answered in prose, without code")
    return lines


def summary_table(results: dict[str, Any]) -> str:
    lines = [
        f"spec {results['spec']['name']} on {results['platform']}: {results['evaluations']} evaluations "
        f"({results['candidates']} candidates), stopped: {results['stop_reason']}",
        "status counts: " + ", ".join(f"{k}={v}" for k, v in results["evaluations_by_status"].items() if v),
        *llm_health_lines(results),
    ]
    for entry in results.get("rejected_winners") or ():
        failed = [
            n for n, o in (entry["confirmation"].get("input_distributions") or {}).items() if o == "failed"
        ]
        lines.append(
            f"warning: {entry['id']} ({_x(entry['speedup_vs_eager'])} vs eager in search) is wrong on "
            f"{', '.join(failed)} inputs and is not reported: {entry['confirmation']['feedback']}"
        )
    best = results.get("best")
    if not best:
        lines.append("no correct kernel found")
        if results["evaluations_by_status"].get("incorrect"):
            # a tolerance tighter than the reference's own rounding leaves every reordering incorrect
            lines.append(
                "incorrect candidates: does the reference itself meet the tolerance? "
                "python -m kernelevolve.eval.conditioning <the same spec> --platform "
                f"{results['platform']} compares it with an fp64 run of itself"
            )
        return "\n".join(lines)
    lines.append(
        f"best {best['id']} ({best['backend']}, {best['operator']}/{best['mode']}): "
        f"{_x(best['speedup_vs_eager'])} vs eager, {_x(best['speedup_vs_compile'])} vs torch.compile"
    )
    confirmation_line = _confirmation_line(best)
    if confirmation_line:
        lines.append(confirmation_line)
    split = best.get("time_split")
    if split:
        lines.append(
            "best's GPU time per call: "
            + ", ".join(
                f"{part} {_ms(split[f'{part}_ms'])} ms ({_share(split.get(f'{part}_share'))})"
                for part in ("own", "library", "other")
            )
        )
    if not best.get("own_kernels_only", True):
        strict = results.get("best_strict")
        lines.append(
            f"best with own kernels only: {strict['id']} ({strict['backend']}, {strict['operator']}/"
            f"{strict['mode']}): {_x(strict['speedup_vs_eager'])} vs eager, "
            f"{_x(strict['speedup_vs_compile'])} vs torch.compile"
            if strict
            else "best with own kernels only: none (every correct kernel calls PyTorch's libraries)"
        )
    others = {k: v for k, v in (results.get("best_by_backend") or {}).items() if k != best["backend"]}
    for backend, entry in others.items():
        lines.append(
            f"best {backend}: {entry['id']} ({entry['operator']}/{entry['mode']}): "
            f"{_x(entry['speedup_vs_eager'])} vs eager, {_x(entry['speedup_vs_compile'])} vs torch.compile"
        )
    header = f"{'shape':<20} {'best ms':>10} {'eager ms':>10} {'compile ms':>11} {'vs eager':>9} {'vs compile':>11}"
    lines += [header, "-" * len(header)]
    for row in best["shapes"]:
        lines.append(
            f"{row['shape']:<20} {_ms(row['best_ms']):>10} {_ms(row['eager_ms']):>10} {_ms(row['compile_ms']):>11} "
            f"{_x(row['speedup_vs_eager']):>9} {_x(row['speedup_vs_compile']):>11}"
        )
    for row in best["shapes"]:
        for label, key in (
            ("eager", "eager_within_tolerance"),
            ("torch.compile", "compile_within_tolerance"),
        ):
            if row.get(key) is False:
                lines.append(
                    f"note: {label}'s own output misses the spec's tolerance at {row['shape']}"
                    + (f" (max abs error {row['compile_max_error']:.3g})" if label != "eager" else "")
                    + ": a correct kernel may not do what it does"
                )
        if row.get("compile_exact_ms"):
            verdict = {True: "meets", False: "misses", None: "was not checked against"}
            lines.append(
                f"note: torch.compile with exact fp32 convolutions takes {_ms(row['compile_exact_ms'])} ms at "
                f"{row['shape']} ({_x(row.get('speedup_vs_compile_exact'))} of it) and its output "
                f"{verdict[row.get('compile_exact_within_tolerance')]} the tolerance"
            )
        if row.get("compile_graphs_ms"):
            lines.append(
                f"note: torch.compile's time at {row['shape']} is host-bound; with CUDA graphs "
                f'(mode="reduce-overhead") it takes {_ms(row["compile_graphs_ms"])} ms '
                f"({_x(row.get('speedup_vs_compile_graphs'))} of it)"
            )
    return "\n".join(lines)


def verification_lines(results: dict[str, Any]) -> list[str]:
    """What a run's verdicts rest on, and (platform=cpu) what its times do not say: under the summary."""
    spec = results["spec"]
    checks = results.get("checks") or {}
    by_status = results.get("evaluations_by_status") or {}
    shapes = [shape["name"] for shape in spec.get("shapes") or ()]
    trials = checks.get("correctness_trials")
    lines = [
        f"verified: {by_status.get('ok', 0)} of {results['evaluations']} kernels evaluated matched the "
        f"reference (atol {spec['atol']:g}, rtol {spec['rtol']:g})"
        + (f" on {trials} fresh seeded inputs" if trials else "")
        + f" at each of {len(shapes)} shape(s) ({', '.join(shapes)}), checked by a judge process that "
        "never imports the kernel"
    ]
    if checks.get("interpreted"):
        lines.append(
            f"timings: platform={results['platform']} runs Triton kernels in Triton's interpreter "
            "(TRITON_INTERPRET=1) against native PyTorch, so the times and speedups above check the "
            "pipeline, not kernel speed; a GPU platform (platform=h100, ...) measures the kernels"
        )
    return lines
