"""A run's or a sweep's results in KernelBench's own result format, for its analysis scripts.

KernelBench's `scripts/eval_from_generations.py` keeps one folder per level run, holding the kernels as
`level_<L>_problem_<ID>_sample_<S>_kernel.py` and `eval_results.json`: problem id (a string) -> a list
of samples, each `{sample_id, compiled, correctness, metadata, runtime, runtime_stats}` as its
`KernelExecResult` (`src/kernelbench/eval.py`) has them, times in ms (`timing.get_timing_stats`:
mean, std, min, max, num_trials, hardware, device). Its baselines are
`baseline_time_torch.json` and `baseline_time_torch_compile_inductor_default.json`:
`{"level<L>": {"<problem file>.py": {mean, std, min, max, num_trials, hardware, device}}}`.

What we write, under OUT/level<L>/ (or OUT/custom/ for specs that are not KernelBench problems,
keyed by spec name): sample 0 of each problem is its winner, as the run reported it: `runtime` the
winner's confirmed median summed over the spec's shapes (KernelBench's is a mean; ours is a median,
so `metadata.runtime_statistic` says "median"), `runtime_stats` the search's timing of that kernel,
`ref_runtime` / `ref_runtime_stats` eager PyTorch on the same machine, and our baselines in
KernelBench's baseline files, so its fast_p scripts compare against the same hardware. A problem with
no correct kernel is a sample with `correctness: false` and the reason; a sweep record whose run
directory is not here (it stayed on the GPU machine) is written from the record alone, without the
kernel file.

    python -m kernelevolve.export kernelbench RUN_OR_SWEEP_DIR [...] --out DIR
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

CUSTOM_LEVEL = "custom"
EVAL_RESULTS = "eval_results.json"
BASELINE_FILES = {
    "eager": "baseline_time_torch.json",
    "compiled": "baseline_time_torch_compile_inductor_default.json",
}
_ORIGIN = re.compile(r"kernelbench:L?(\d+)/(\d+)")
# statuses of which a candidate had compiled (KernelBench's `compiled`: it loaded and ran)
_NOT_COMPILED = ("rejected_static", "compile_error")


def level_key(level: str) -> str:
    """A level's folder and its key in the baseline files: level1, level2... or custom."""
    return f"level{level}" if level.isdigit() else CUSTOM_LEVEL


def kernel_file(level: int | str, problem: int | str, sample: int = 0) -> str:
    return f"level_{level}_problem_{problem}_sample_{sample}_kernel.py"


def _stats(ms: dict[str, Any] | None, hardware: str, device: str) -> dict[str, Any]:
    if not ms:
        return {}
    return {
        "mean": ms.get("mean_ms"),
        "std": ms.get("std_ms"),
        "min": ms.get("min_ms"),
        "max": ms.get("max_ms"),
        "median": ms.get("median_ms"),
        "num_trials": ms.get("trials"),
        "hardware": hardware,
        "device": device,
    }


def _summed(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-shape timing stats as one (KernelBench problems have one shape: that one's as is)."""
    if len(stats) == 1:
        return stats[0]
    if not stats or any(not s for s in stats):
        return {}
    out = dict(stats[0])
    for key in ("mean", "min", "max", "median"):
        values = [s.get(key) for s in stats]
        out[key] = sum(values) if None not in values else None  # type: ignore[arg-type]
    out["std"] = None
    return out


def _platform(name: str) -> tuple[str, str]:
    from kernelevolve.platforms import PlatformError, load_platform

    try:
        platform = load_platform(name)
    except PlatformError:
        return name, name
    return platform.description or name, "cuda:0" if platform.device == "cuda" else platform.device


def problem_of(spec: dict[str, Any]) -> tuple[str, str, str]:
    """(level, problem id, problem file stem) from a spec's JSON: KernelBench's own where it is one."""
    match = _ORIGIN.fullmatch(str(spec.get("origin", "")))
    if match:
        return match.group(1), match.group(2), str(spec.get("description") or spec["name"])
    return CUSTOM_LEVEL, str(spec["name"]), str(spec["name"])


def run_entry(run_dir: Path) -> tuple[dict[str, Any], str | None, dict[str, dict[str, Any]]]:
    """(sample 0's eval_results entry, the winner's source or None, baseline -> KernelBench stats)."""
    from kernelevolve.search.graph import SearchGraph

    results = json.loads((run_dir / "results.json").read_text())
    hardware, device = _platform(str(results.get("platform", "")))
    best = results.get("best") or {}
    baselines = results.get("baselines") or {}
    shapes = [s["name"] for s in (results.get("spec") or {}).get("shapes") or []] or list(baselines)
    timings = {
        kind: _summed([_stats((baselines.get(s) or {}).get(kind), hardware, device) for s in shapes])
        for kind in BASELINE_FILES
    }
    by_status = {k: v for k, v in (results.get("evaluations_by_status") or {}).items() if v}
    metadata: dict[str, Any] = {
        "hardware": hardware,
        "device": device,
        "kernelevolve_run_dir": str(run_dir.resolve()),
        "platform": results.get("platform"),
        "evaluations": results.get("evaluations"),
        "evaluations_by_status": by_status,
        "stop_reason": results.get("stop_reason", ""),
    }
    entry: dict[str, Any] = {
        "sample_id": 0,
        "compiled": any(status not in _NOT_COMPILED for status in by_status),
        "correctness": bool(best),
        "metadata": metadata,
        "runtime": -1.0,
        "runtime_stats": {},
        "ref_runtime": (timings["eager"] or {}).get("mean") or -1.0,
        "ref_runtime_stats": timings["eager"],
    }
    if not best:
        metadata["correctness_issue"] = "no candidate passed kernelevolve's correctness checks"
        return entry, None, timings
    graph = SearchGraph.load(run_dir / "graph.jsonl")
    node = graph.node(str(best["id"]))
    search_stats = [
        _stats(
            node.report.latency[s].to_json() if node.report and s in node.report.latency else None,
            hardware,
            device,
        )
        for s in shapes
    ]
    times = [row.get("best_ms") for row in best.get("shapes", [])]
    runtime = sum(times) if times and None not in times else None
    metadata.update(
        candidate_id=best["id"],
        backend=best.get("backend"),
        operator=best.get("operator"),
        runtime_statistic="median",
        speedup_vs_eager=best.get("speedup_vs_eager"),
        speedup_vs_compile=best.get("speedup_vs_compile"),
        max_abs_error=best.get("max_abs_error"),
        confirmation=(best.get("confirmation") or {}).get("status"),
    )
    entry.update(
        compiled=True, runtime=runtime if runtime is not None else -1.0, runtime_stats=_summed(search_stats)
    )
    return entry, node.candidate.source, timings


def record_entry(record: dict[str, Any]) -> dict[str, Any]:
    """A sweep record's entry where its run directory is not here: times from the record, no kernel."""
    by_status = record.get("evaluations_by_status") or {}
    hardware, device = _platform(str(record.get("platform", "")))
    metadata = {
        "hardware": hardware,
        "device": device,
        "kernelevolve_status": record.get("status"),
        "evaluations_by_status": by_status,
        "kernelevolve_run_dir": record.get("run_dir"),
        "kernel_source": "not here (the run directory stayed where the sweep ran)",
        "runtime_statistic": "median",
        "speedup_vs_eager": record.get("speedup_vs_eager"),
        "speedup_vs_compile": record.get("speedup_vs_compile"),
    }
    if record.get("error"):
        metadata["other_error"] = record["error"]
    return {
        "sample_id": 0,
        "compiled": bool(record.get("correct")) or any(s not in _NOT_COMPILED for s in by_status),
        "correctness": bool(record.get("correct")),
        "metadata": metadata,
        "runtime": record.get("best_ms") or -1.0,
        "runtime_stats": {},
        "ref_runtime": record.get("eager_ms") or -1.0,
        "ref_runtime_stats": {},
    }


class _Writer:
    """Entries and baselines gathered per level, then written as KernelBench's files."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.results: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
        self.baselines: dict[str, dict[str, dict[str, Any]]] = {
            kind: defaultdict(dict) for kind in BASELINE_FILES
        }

    def add(
        self,
        level: str,
        problem: str,
        stem: str,
        entry: dict[str, Any],
        source: str | None,
        timings: dict[str, dict[str, Any]],
    ) -> None:
        folder = self.out / level_key(level)
        folder.mkdir(parents=True, exist_ok=True)
        if source is not None:
            (folder / kernel_file(level, problem)).write_text(source)
        self.results[level][problem] = [entry]
        for kind, stats in timings.items():
            if stats:
                self.baselines[kind][level_key(level)][f"{stem}.py"] = stats

    def write(self) -> list[Path]:
        written = []
        for level, problems in self.results.items():
            path = self.out / level_key(level) / EVAL_RESULTS
            ordered = dict(sorted(problems.items(), key=lambda kv: (len(kv[0]), kv[0])))  # 2 before 10
            path.write_text(json.dumps(ordered, indent=4))
            written.append(path)
        for kind, levels in self.baselines.items():
            if levels:
                path = self.out / BASELINE_FILES[kind]
                path.write_text(json.dumps(levels, indent=4))
                written.append(path)
        return written


def export_kernelbench(sources: list[Path | str], out: Path | str) -> list[Path]:
    """Run directories and sweep folders (holding results/*.json records) -> KernelBench's files in `out`."""
    writer = _Writer(Path(out))
    for source in map(Path, sources):
        if (source / "results.json").is_file() and (source / "spec.json").is_file():
            spec = json.loads((source / "spec.json").read_text())
            writer.add(*problem_of(spec), *run_entry(source))
            continue
        records = sorted((source / "results").glob("*.json"))
        if not records:
            raise ValueError(f"{source}: neither a run directory (results.json) nor a sweep (results/*.json)")
        for path in records:
            record = json.loads(path.read_text())
            level, problem, stem = str(record["level"]), str(record["problem_id"]), str(record["name"])
            run_dir = Path(str(record.get("run_dir") or ""))
            if record.get("run_dir") and (run_dir / "results.json").is_file():
                writer.add(level, problem, stem, *run_entry(run_dir))
            else:
                writer.add(level, problem, stem, record_entry(record), None, {})
    return writer.write()
