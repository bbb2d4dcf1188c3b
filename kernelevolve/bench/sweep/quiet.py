"""Host-bound baselines measured again with nothing else running, once a sweep call's problems are done.

A baseline that PyTorch issues as many small kernels (MobileNetV2's eager forward: ~150 launches a
call) takes as long as the host takes to issue it, and a sweep runs problems side by side whose
captures and compiles load that host. On the sample's sixth run, eager MobileNetV2 timed 3.66 ms
against 1.15 and 1.65 ms in runs 4 and 5 on the same kind of machine, and our kernel read 4.9x eager
instead of about 2x. So after a call, every record of the sweep folder whose eager or torch.compile
time was host-bound (the host's median time to issue one call at least `HOST_BOUND_SHARE` of the
call's GPU time) and not yet re-measured gets its baselines measured again, one problem at a time on
one GPU, and keeps the faster of the two measurements of each: both are honest measurements of the
same protocol, and the faster is the one less slowed by its neighbours (never to our advantage).
The record keeps both (`in_search_baselines`, `quiet_baselines`).

Where the two disagree by more than `DISAGREEMENT` on eager or torch.compile, one of them was slowed by
something, and the faster may be too (experiments/sample_sweep_h200/run_10). Such a problem is measured
alone a second time, and each baseline keeps the fastest of the three (`quiet_baselines["measurements"]`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from kernelevolve.bench.sweep.run import TIME_FORMAT, record_from_results
from kernelevolve.types import HOST_BOUND_SHARE, Baseline, KernelSpec

log = logging.getLogger(__name__)


class MeasuresBaselines(Protocol):
    def baselines(self, spec: KernelSpec, platform: str) -> dict[str, Baseline]: ...

    def close(self) -> None: ...


# (a problem's run config) -> an evaluator that measures, never reads a cache
EvaluatorFactory = Callable[[dict[str, Any]], MeasuresBaselines]


def host_bound(record: dict[str, Any]) -> bool:
    """Was the record's eager or torch.compile time set by the host's issue time?"""
    pairs = (("eager_host_ms", "eager_ms"), ("compile_host_ms", "compile_ms"))
    return any(
        (host := record.get(host_key)) is not None
        and (gpu := record.get(gpu_key))
        and host >= HOST_BOUND_SHARE * gpu
        for host_key, gpu_key in pairs
    )


def needs_quiet_baselines(record: dict[str, Any]) -> bool:
    """A host-bound record not yet measured again."""
    return record.get("status") == "ok" and "quiet_baselines" not in record and host_bound(record)


def remeasure(
    records: Iterable[dict[str, Any]],
    config_for: Callable[[dict[str, Any]], dict[str, Any]],
    make_evaluator: EvaluatorFactory,
    store: Callable[[dict[str, Any]], None],
    deadline: float | None = None,
) -> list[str]:
    """Measure again the baselines of each record that needs it, one at a time, storing each updated
    record as it is done; `config_for(record)` is its problem's run config, as its search had it (spec,
    platform, evaluation settings). Stops starting new ones past `deadline` (time.monotonic()).
    Returns the problems done. A failed measurement is logged and leaves its record as it was."""
    done: list[str] = []
    for record in records:
        if not needs_quiet_baselines(record):
            continue
        if deadline is not None and time.monotonic() > deadline:
            log.info("quiet baselines: time limit reached; the rest wait for the next call")
            break
        try:
            quiet = _measured_alone(record, config_for(record), make_evaluator)
        except Exception as exc:  # noqa: BLE001 - a measurement, not a verdict: the record stands as it is
            log.warning(
                "quiet baselines of %s failed: %s: %s", record.get("problem"), type(exc).__name__, exc
            )
            continue
        updated = with_quiet_baselines(record, quiet)
        store(updated)
        done.append(str(record.get("problem")))
        log.info(
            "quiet baselines of %s: eager %.4g -> %.4g ms, torch.compile %s -> %s ms (%d measurement(s) alone)",
            record.get("problem"),
            record["eager_ms"],
            updated["quiet_baselines"]["eager_ms"],
            _ms(record.get("compile_ms")),
            _ms(updated["quiet_baselines"]["compile_ms"]),
            updated["quiet_baselines"]["measurements"],
        )
    return done


def _measured_alone(
    record: dict[str, Any], config: dict[str, Any], make_evaluator: EvaluatorFactory
) -> dict[str, Any]:
    """The record's baselines measured alone, twice where the first disagrees with the record's."""
    quiet = quiet_measurement(_measure(config, make_evaluator))
    if not disagrees(record, quiet):
        return quiet
    try:
        again = quiet_measurement(_measure(config, make_evaluator))
    except Exception as exc:  # noqa: BLE001 - a measurement, not a verdict: the first one stands
        log.warning(
            "quiet baselines of %s, measured again: %s: %s", record.get("problem"), type(exc).__name__, exc
        )
        return quiet
    return {**fastest_of(quiet, again), "measurements": 2}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _measure(config: dict[str, Any], make_evaluator: EvaluatorFactory) -> dict[str, Baseline]:
    from kernelevolve.app import resolve_run_spec
    from kernelevolve.platforms import load_platform

    spec = resolve_run_spec(config, load_platform(str(config["platform"]["name"])))
    evaluator = make_evaluator(config)
    try:
        return evaluator.baselines(spec, str(config["platform"]["name"]))
    finally:
        evaluator.close()


# eager or torch.compile measured beside others and alone further apart than this: measure alone again
DISAGREEMENT = 1.25


def quiet_measurement(baselines: dict[str, Baseline]) -> dict[str, Any]:
    """One measurement's baselines summed over shapes as a record's own fields are
    (`run.record_from_results`), with their host issue times and when it was taken."""
    summed = record_from_results({"baselines": {shape: b.to_json() for shape, b in baselines.items()}})
    quiet: dict[str, Any] = {key: summed[key] for key in (*_KEPT_FASTER, *_HOST_TIMES)}
    quiet["measured_at"] = time.strftime(TIME_FORMAT)
    quiet["measurements"] = 1
    return quiet


def disagrees(record: dict[str, Any], quiet: dict[str, Any]) -> bool:
    """Do the record's eager or torch.compile time and the quiet one differ by more than DISAGREEMENT?"""
    for key in ("eager_ms", "compile_ms"):
        pair = [value for value in (record.get(key), quiet.get(key)) if value]
        if len(pair) == 2 and max(pair) > DISAGREEMENT * min(pair):
            return True
    return False


def fastest_of(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two quiet measurements as one: each baseline's faster, with the host issue time of the faster
    eager and torch.compile, and the later time of measurement."""
    merged = {key: _faster(first.get(key), second.get(key)) for key in _KEPT_FASTER}
    for time_key, host_key in (("eager_ms", "eager_host_ms"), ("compile_ms", "compile_host_ms")):
        second_faster = (second.get(time_key) or math.inf) < (first.get(time_key) or math.inf)
        merged[host_key] = (second if second_faster else first).get(host_key)
    merged["measured_at"] = second["measured_at"]
    return merged


def with_quiet_baselines(record: dict[str, Any], quiet: dict[str, Any]) -> dict[str, Any]:
    """The record with the faster of its in-search and quiet (`quiet_measurement`) figures of each
    baseline, and speedups to match."""
    updated = dict(record)
    updated["in_search_baselines"] = {key: record.get(key) for key in (*_KEPT_FASTER, *_HOST_TIMES)}
    updated["quiet_baselines"] = quiet
    for other in ("eager_exact_ms", "compile_exact_ms", "compile_graphs_ms"):
        if record.get(other) is not None:
            updated[other] = _faster(record[other], quiet[other])
    eager = _faster(record.get("eager_ms"), quiet["eager_ms"])
    compiled = _faster(record.get("compile_ms"), quiet["compile_ms"])
    updated["eager_ms"], updated["compile_ms"] = eager, compiled
    for key in ("strict", "permissive"):
        if isinstance(record.get(key), dict):
            updated[key] = dict(record[key])
    for part in (updated, updated.get("strict"), updated.get("permissive")):
        if isinstance(part, dict) and part.get("best_ms"):
            part["speedup_vs_eager"] = eager / part["best_ms"] if eager else None
            part["speedup_vs_compile"] = compiled / part["best_ms"] if compiled else None
    return updated


_KEPT_FASTER = ("eager_ms", "compile_ms", "eager_exact_ms", "compile_exact_ms", "compile_graphs_ms")
_HOST_TIMES = ("eager_host_ms", "compile_host_ms")


def _faster(first: float | None, second: float | None) -> float | None:
    present = [v for v in (first, second) if v is not None]
    return min(present) if present else None


def local_evaluator_factory() -> EvaluatorFactory:
    """One child on the first GPU, with a baseline cache of its own: a cached value is the one being replaced."""

    def make(config: dict[str, Any]) -> MeasuresBaselines:
        import tempfile

        from kernelevolve.app import eval_settings
        from kernelevolve.eval.baselines import BaselineCache
        from kernelevolve.eval.local import LocalEvaluator
        from kernelevolve.platforms import load_platform

        platform = load_platform(str(config["platform"]["name"]))
        cache = BaselineCache(Path(tempfile.mkdtemp(prefix="kernelevolve-quiet-baselines-")))
        devices = None if platform.device == "cpu" else [f"{platform.device}:0"]
        return LocalEvaluator(platform, eval_settings(config), devices, 1, cache)

    return make
