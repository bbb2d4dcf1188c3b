"""The one place that turns configuration into objects, and runs a search with them."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevolve.config import ConfigError, to_plain, validate
from kernelevolve.config import eval_settings as eval_settings  # re-exported for callers of app
from kernelevolve.platforms import Platform, load_platform
from kernelevolve.results.outputs import (
    build_results,
    confirmed_fitness,
    summary_table,
    verification_lines,
    write_best,
    write_results,
)
from kernelevolve.results.progress import Progress, SearchProgress
from kernelevolve.results.winners import (
    MAX_REPLACEMENTS,
    contenders,
    distribution_check_requests,
    reported_winner,
    with_distribution_checks,
)
from kernelevolve.search.engine import PROPOSAL_DRAIN_S, Engine, EngineSettings, Scheduler
from kernelevolve.search.graph import Node, SearchGraph, best_strict, own_kernels_only
from kernelevolve.search.interfaces import Evaluator, Operator
from kernelevolve.specs.input_distributions import failed_distributions
from kernelevolve.types import Baseline, EvalReport, EvalRequest, EvalSettings, KernelSpec

log = logging.getLogger(__name__)

GRAPH_FILE = "graph.jsonl"
SPEC_FILE = "spec.json"
CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    results: dict[str, Any]
    best: Node | None


def run_strict(cfg: Mapping[str, Any]) -> bool:
    """Strict mode (own kernels only): the top-level `strict`."""
    return bool(cfg.get("strict", True))


def resolve_run_spec(cfg: Mapping[str, Any], platform: Platform) -> KernelSpec:
    from kernelevolve.specs.loading import resolve_spec

    spec_arg = cfg.get("spec")
    if not spec_arg:
        raise ConfigError("no spec given: add +spec=<shipped name | path/to/op.yaml | kernelbench:LEVEL/ID>")
    return resolve_spec(str(spec_arg), platform, cfg)  # a spec source reads its section (kernelbench.path)


def runnable_backends(spec: KernelSpec, platform: Platform, include_compile_only: bool) -> tuple[str, ...]:
    """The spec's languages this platform supports and this machine has installed."""
    allowed = ("full", "compile_only") if include_compile_only else ("full",)
    supported = [b for b in spec.backends if platform.support(b) in allowed]
    missing = [b for b in supported if not backend_installed(b)]
    if missing:
        log.warning("skipping %s for %s: not installed here", ", ".join(missing), spec.name)
    return tuple(b for b in supported if b not in missing)


def backend_installed(name: str) -> bool:
    import importlib.util

    from kernelevolve.backends import get_backend

    return importlib.util.find_spec(get_backend(name).runtime_package) is not None


def build_evaluator(cfg: Mapping[str, Any], platform: Platform, settings: EvalSettings) -> Evaluator:
    evaluator_cfg = dict(cfg.get("evaluator") or {"name": "local"})
    name = evaluator_cfg.pop("name", "local")
    devices = cfg["platform"].get("devices")
    if name == "local":
        from kernelevolve.eval.local import LocalEvaluator, workers_per_device

        return LocalEvaluator(
            platform,
            settings,
            devices=list(devices) if devices else None,
            workers_per_device=workers_per_device(evaluator_cfg.get("workers_per_device"), platform),
        )
    if name == "ray":
        from kernelevolve.eval.ray_evaluator import RayEvaluator

        return RayEvaluator(platform, settings, **evaluator_cfg)
    raise ConfigError(f"unknown evaluator {name!r}; valid: local, ray")


def build_operators(cfg: Mapping[str, Any], run_dir: Path | None = None) -> list[Operator]:
    from kernelevolve.variation import OPERATORS, OperatorContext, load_entry_points

    load_entry_points()
    search = cfg["search"]
    names = list(search.get("operators") or [])
    llm_cfg = cfg.get("llm") or {}
    if llm_cfg.get("enabled") and "llm" not in names:
        names.append("llm")
    options: dict[str, dict[str, Any]] = dict(search.get("operator_options") or {})
    context = OperatorContext(
        strict=run_strict(cfg),
        kb_config=cfg.get("kb") or {},
        run_dir=run_dir,
        llm_config={k: v for k, v in llm_cfg.items() if k != "enabled"},
    )
    return [OPERATORS.create(name, context=context, **options.get(name, {})) for name in names]


def build_scheduler(cfg: Mapping[str, Any]) -> Scheduler:
    from kernelevolve.variation.scheduler import OperatorScheduler

    return OperatorScheduler(strategy=str(cfg["search"].get("scheduler", "ucb")))


def _run_dir(cfg: Mapping[str, Any], spec: KernelSpec, platform: Platform) -> Path:
    """Where a run started from Python (no Hydra) goes: <run.root>/<run.name>, made unique."""
    run_cfg = cfg.get("run") or {}
    name = run_cfg.get("name") or f"{spec.name}-{platform.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir = Path(str(run_cfg.get("root", "runs"))) / name
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = run_dir.with_name(f"{name}-{suffix}")
    return run_dir


def _load_or_save_spec(
    cfg: Mapping[str, Any], platform: Platform, run_dir: Path | None
) -> tuple[KernelSpec, Path, SearchGraph]:
    """A resumed run uses the spec it started with (never re-resolved) and its graph checkpoint. A new
    one goes to `run_dir` (the command line's hydra.run.dir, which Hydra has made), else `_run_dir`."""
    if cfg.get("resume"):
        resumed = Path(str(cfg["resume"])).expanduser()
        if not (resumed / GRAPH_FILE).is_file() or not (resumed / SPEC_FILE).is_file():
            raise ConfigError(
                f"resume={resumed}: not a kernelevolve run directory (no {GRAPH_FILE} / {SPEC_FILE})"
            )
        spec = KernelSpec.from_json(json.loads((resumed / SPEC_FILE).read_text()))
        return spec, resumed, SearchGraph.load(resumed / GRAPH_FILE)
    if run_dir is not None and (run_dir / GRAPH_FILE).is_file():
        raise ConfigError(f"{run_dir} already holds a run: resume={run_dir} continues it")
    spec = resolve_run_spec(cfg, platform)
    if run_dir is None:
        run_dir = _run_dir(cfg, spec, platform)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / SPEC_FILE).write_text(json.dumps(spec.to_json(), indent=2))
    (run_dir / CONFIG_FILE).write_text(json.dumps(cfg, indent=2, default=str))
    return spec, run_dir, SearchGraph(run_dir / GRAPH_FILE)


def _record_past_win(
    cfg: Mapping[str, Any], spec: KernelSpec, platform: Platform, results: dict[str, Any], best: Node
) -> None:
    kb_cfg = cfg.get("kb") or {}
    if not kb_cfg.get("record_past_wins", True) or kb_cfg.get("enabled") is False:
        return
    best_info = results.get("best") or {}
    if not best_info or (best_info.get("speedup_vs_eager") or 0) <= 1.0:
        return
    try:
        from kernelevolve.kb.past_wins import PastWin, PastWinStore
        from kernelevolve.variation import past_wins_dir

        win = PastWin.from_spec(
            spec,
            platform.name,
            best.candidate.backend,
            best.candidate.source,
            best_info["speedup_vs_eager"],
            best_info.get("speedup_vs_compile"),
        )
        PastWinStore(past_wins_dir(kb_cfg)).add(win)
    except ImportError as exc:
        log.info("past win not recorded (knowledge-base extra not installed: %s)", exc)
    except RuntimeError as exc:  # KBUnavailable: packages present, embedding model missing
        log.info("past win not recorded: %s", exc)
    except Exception:
        log.exception("past win not recorded")


def run_search(cfg_in: Any, run_dir: Path | None = None) -> RunResult:
    """Build everything from config, run the search, and write the run directory (`run_dir`, else
    <run.root>/<run.name>). The configuration is checked in full (config.validate) before any work."""
    cfg = to_plain(cfg_in)
    settings = validate(cfg)
    platform = load_platform(str(cfg["platform"]["name"]))
    if (cfg.get("llm") or {}).get("enabled"):
        from kernelevolve.llm.endpoint_check import EndpointError, check_endpoint

        try:  # an endpoint that answers but is no OpenAI API: one line, before any work
            check_endpoint(cfg["llm"])
        except EndpointError as exc:
            raise ConfigError(str(exc)) from None
    with Progress(enabled=bool(cfg.get("progress", True))) as progress:
        progress.phase("resolving the spec")
        spec, run_dir, graph = _load_or_save_spec(cfg, platform, run_dir)
        log.info("run directory: %s", run_dir)
        return _run(cfg, settings, platform, spec, run_dir, graph, progress)


def _run(
    cfg: Mapping[str, Any],
    settings: EvalSettings,
    platform: Platform,
    spec: KernelSpec,
    run_dir: Path,
    graph: SearchGraph,
    progress: Progress,
) -> RunResult:
    from kernelevolve.search.selection import build_selection
    from kernelevolve.search.termination import build_termination

    search = cfg["search"]
    backends = runnable_backends(spec, platform, bool(search.get("include_compile_only_backends", False)))
    policy = build_selection(str(search["policy"]), **dict(search.get("options") or {}))
    limits = dict(search.get("termination") or {})
    termination = build_termination(limits)
    operators = build_operators(cfg, run_dir)
    scheduler = build_scheduler(cfg)
    evaluator = build_evaluator(cfg, platform, settings)
    shown = SearchProgress(
        progress, limits.get("max_evaluations"), limits.get("wall_clock_s"), len(graph.evaluated())
    )
    engine = Engine(
        spec=spec,
        platform=platform,
        graph=graph,
        evaluator=evaluator,
        operators=operators,
        policy=policy,
        scheduler=scheduler,
        termination=termination,
        eval_settings=settings,
        backends=backends,
        settings=EngineSettings(
            seed=int(cfg.get("seed", 0)),
            proposal_concurrency=int(search.get("proposal_concurrency", 2)),
            children_per_proposal=int(search.get("children_per_proposal", 2)),
            drain_timeout_s=float(settings.timeout_s) * 2,
            proposal_drain_s=float(
                PROPOSAL_DRAIN_S if search.get("proposal_drain_s") is None else search["proposal_drain_s"]
            ),
        ),
        on_report=shown.report,
        on_phase=shown.phase,
    )
    try:
        outcome = engine.run()
        shown.phase("confirm")
        # the winners and, where one timed close behind, their runners-up (winners.py)
        best_contenders = contenders(graph, outcome.best, lambda node: True)
        strict_contenders = contenders(graph, best_strict(graph), own_kernels_only)
        confirmations = confirm_winners(
            evaluator, [*best_contenders, *strict_contenders], spec, platform, settings
        )
        confirm = WinnerConfirmer(
            evaluator, graph, confirmations, spec, platform, settings, outcome.baselines
        )
        best = confirm.reported(best_contenders, lambda node: True)
        strict = confirm.reported(strict_contenders, own_kernels_only)
        time_split = _time_split(evaluator, best, spec, platform, settings)
    finally:
        evaluator.close()
    shown.phase("write")
    extra: dict[str, Any] = {
        "strict": settings.strict,
        "run_dir": str(run_dir),
        "scheduler": outcome.scheduler,
        "baseline_measurement_s": engine.baseline_s,
        "seed_proposal_s": engine.seed_s,
        "checks": {  # what every correct verdict rests on, for the summary
            "correctness_trials": settings.correctness_trials,
            "timing_trials": settings.timing_trials,
            "interpreted": platform.device == "cpu",
        },
    }
    try:  # the least time any kernel could take at each shape, for "how close to the limit"
        from kernelevolve.eval.roofline import floors_ms

        extra["roofline_floor_ms"] = floors_ms(spec, platform)
    except Exception:  # a measurement beside the search must never fail it
        log.debug("no roofline floor for %s", spec.name, exc_info=True)
    for operator in operators:
        report = getattr(operator, "report", None)
        if callable(report):
            extra.setdefault("operators", {})[operator.name] = report()
    results = build_results(
        spec=spec,
        platform=platform.name,
        graph=graph,
        baselines=outcome.baselines,
        stop_reason=outcome.stop_reason,
        elapsed_s=outcome.elapsed_s,
        evaluations_this_session=outcome.evaluations_this_session,
        extra=extra,
        confirmations=confirmations,
        winners=(best, strict),
    )
    if results.get("best"):
        results["best"]["time_split"] = time_split
    if best is not None:
        write_best(run_dir, best, spec, platform.name)
        _record_past_win(cfg, spec, platform, results, best)
    (run_dir / "graph_export.json").write_text(json.dumps(graph.export(), indent=2, default=str))
    write_results(run_dir, results)
    _write_report(run_dir)
    return RunResult(run_dir=run_dir, results=results, best=best)


def confirm_winners(
    evaluator: Evaluator,
    winners: list[Node | None],
    spec: KernelSpec,
    platform: Platform,
    settings: EvalSettings,
) -> dict[str, EvalReport]:
    """Each reported winner (the best, the best with own kernels only) evaluated once more, checked and
    timed with every one of the timing trials, as the baselines are: no settling and no racing. The search
    ranks candidates on settled timings and reports the fastest, whose own time is then the likeliest to
    be a lucky one; its confirmation is what results.json reports (`build_results`). A confirmation that
    fails says the winner is flaky; it is reported as such.

    Each winner is also checked once on inputs from every other distribution in
    `spec.input_distributions` (a fresh seed each, correctness above all: `distribution_check_settings`);
    `with_distribution_checks` folds those into its confirmation, which fails, flagged
    `failed_distribution:<name>`, where one of them did. Node id -> report; none where it could not run."""
    confirming = dataclasses.replace(settings, settle_relative_halfwidth=0.0, race_margin=0.0)
    unique = {node.id: node for node in winners if node is not None}
    futures: dict[str, Future[EvalReport]] = {}
    checks: dict[str, dict[str, Future[EvalReport] | None]] = {}
    for node_id, node in unique.items():
        try:
            futures[node_id] = evaluator.submit(
                EvalRequest(candidate=node.candidate, spec=spec, platform=platform.name, settings=confirming)
            )
        except Exception:  # a measurement of a finished search must never fail it
            log.exception("confirmation of %s not submitted", node_id)
            continue
        for name, request in distribution_check_requests(
            node.candidate, spec, platform.name, confirming
        ).items():
            try:
                checks.setdefault(node_id, {})[name] = evaluator.submit(request)
            except Exception:
                log.exception("check of %s on %s inputs not submitted", node_id, name)
                checks.setdefault(node_id, {})[name] = None
    confirmations: dict[str, EvalReport] = {}
    for node_id, future in futures.items():
        report = _result(future, settings, f"confirmation of {node_id}")
        outcomes = {
            name: _result(check, settings, f"check of {node_id} on {name} inputs") if check else None
            for name, check in checks.get(node_id, {}).items()
        }
        if report is None:
            continue
        report = with_distribution_checks(report, outcomes, confirming.seed)
        failed = failed_distributions(report.flags)
        if failed:
            log.warning(
                "the winner %s is wrong on %s inputs and is not reported: %s",
                node_id,
                ", ".join(failed),
                report.feedback,
            )
        elif not report.ok:
            log.warning(
                "the winner %s failed its confirmation: %s %s", node_id, report.status.value, report.feedback
            )
        confirmations[node_id] = report
    return confirmations


def _result(future: Future[EvalReport], settings: EvalSettings, what: str) -> EvalReport | None:
    try:
        return future.result(timeout=3 * settings.timeout_s)
    except Exception:  # a measurement of a finished search must never fail it
        log.exception("%s not measured", what)
        return None


@dataclass
class WinnerConfirmer:
    """Chooses the winners reported, confirming replacements for those wrong on an input distribution."""

    evaluator: Evaluator
    graph: SearchGraph
    confirmations: dict[str, EvalReport]  # grows with the replacements' confirmations
    spec: KernelSpec
    platform: Platform
    settings: EvalSettings
    baselines: Mapping[str, Baseline]

    def reported(self, nodes: list[Node], accepts: Callable[[Node], bool]) -> Node | None:
        """`reported_winner` of `nodes`, unless that one failed on an input distribution: then the next
        nodes `accepts` takes, best first, are confirmed one at a time (up to MAX_REPLACEMENTS) and the
        first whose confirmation passes in full is reported; None where none does (the ones rejected stay
        in results.json under `rejected_winners`)."""
        chosen = reported_winner(nodes, self.confirmations, self.baselines)
        if chosen is None or not self._wrong(chosen):
            return chosen
        tried = {node.id for node in nodes}
        for _ in range(MAX_REPLACEMENTS):
            following = next(
                (n for n in self.graph.top(len(self.graph)) if n.id not in tried and accepts(n)), None
            )
            if following is None:
                break
            tried.add(following.id)
            log.warning(
                "confirming %s in place of the winners wrong on some input distribution", following.id
            )
            if following.id not in self.confirmations:
                self.confirmations.update(
                    confirm_winners(self.evaluator, [following], self.spec, self.platform, self.settings)
                )
            confirmation = self.confirmations.get(following.id)
            if confirmed_fitness(following, dict(self.baselines), confirmation) is not None:
                return following
        log.warning(
            "no winner reported: %s was wrong on some input distribution, and none of the %d node(s) "
            "tried after it passed its confirmation",
            chosen.id,
            len(tried) - 1,
        )
        return None

    def _wrong(self, node: Node) -> bool:
        report = self.confirmations.get(node.id)
        return report is not None and bool(failed_distributions(report.flags))


def _time_split(
    evaluator: Evaluator, best: Node | None, spec: KernelSpec, platform: Platform, settings: EvalSettings
) -> dict[str, Any] | None:
    """On a GPU, the winner's device time in our kernels vs library calls, measured in an evaluation
    child; None on the CPU, or where the evaluator cannot profile or the profile fails."""
    profile = getattr(evaluator, "profile", None)
    if best is None or platform.device == "cpu" or not callable(profile):
        return None
    request = EvalRequest(candidate=best.candidate, spec=spec, platform=platform.name, settings=settings)
    try:
        split: dict[str, Any] | None = profile(request)
    except Exception:  # a measurement of a finished search must never fail it
        log.exception("time split of %s not measured", best.id)
        return None
    return split


def _write_report(run_dir: Path) -> None:
    """report.html beside results.json; a report problem never fails a finished search."""
    try:
        from kernelevolve.results.report import write_run_report

        write_run_report(run_dir)
    except Exception:
        log.exception("report.html not written for %s", run_dir)


def print_summary(result: RunResult) -> None:
    print(summary_table(result.results))
    for line in verification_lines(result.results):
        print(line)
    print(f"run directory: {result.run_dir}")
