"""The search loop: select -> propose -> evaluate -> score -> record -> terminate?

The engine keeps the evaluator busy: operator calls (LLM calls are slow) run on a small thread
pool, evaluations run wherever the evaluator runs them, and both are consumed in completion order.
Every candidate and every report goes into the graph's append-only checkpoint as soon as it
exists, so a killed run resumes without re-evaluating anything. What to evaluate and propose next is
decided in `dispatch`, not here.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from kernelevolve.eval.timers import CUT_SHORT_FLAG
from kernelevolve.platforms import Platform
from kernelevolve.search.dispatch import STRICT_TURN, Dispatch, Scheduler
from kernelevolve.search.fitness import score
from kernelevolve.search.graph import Node, SearchGraph
from kernelevolve.search.interfaces import (
    Evaluator,
    Operator,
    ParentSet,
    Prepares,
    ProposalContext,
    SearchState,
    SelectionPolicy,
    TerminationRule,
)
from kernelevolve.types import Baseline, Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec, Status

log = logging.getLogger(__name__)

# How long a finished search waits for proposals still running: a level-3 network's capture, not an LLM's
# full timeout
PROPOSAL_DRAIN_S = 120.0
__all__ = ["STRICT_TURN", "Engine", "EngineSettings", "Scheduler", "SearchOutcome", "incumbent_ms"]


@dataclass(frozen=True)
class EngineSettings:
    seed: int = 0
    proposal_concurrency: int = 2  # operator calls in flight at once
    children_per_proposal: int = 2  # budget hint passed to operators
    max_barren_rounds: int = 25  # consecutive proposal rounds that give nothing new -> exhausted
    drain_timeout_s: float = 600.0  # how long to wait for in-flight evaluations after a stop
    # how long to wait for proposals still running after a stop; 0 where the process ends right after the
    # run without joining threads (a sweep's isolated problem), so a capture nobody needs holds nothing
    proposal_drain_s: float = PROPOSAL_DRAIN_S
    progress: bool = True


@dataclass(frozen=True)
class SearchOutcome:
    best: Node | None
    stop_reason: str
    evaluations_this_session: int
    elapsed_s: float
    baselines: dict[str, Baseline]
    scheduler: dict[str, Any] = field(default_factory=dict)


def _crash_report(candidate: Candidate, exc: BaseException) -> EvalReport:
    return EvalReport(
        candidate_id=candidate.id,
        status=Status.WORKER_CRASH,
        error_name=type(exc).__name__,
        feedback=f"evaluator failed to return a report: {exc}",
    )


class Engine:
    def __init__(
        self,
        spec: KernelSpec,
        platform: Platform,
        graph: SearchGraph,
        evaluator: Evaluator,
        operators: Sequence[Operator],
        policy: SelectionPolicy,
        scheduler: Scheduler,
        termination: TerminationRule,
        eval_settings: EvalSettings,
        backends: tuple[str, ...],
        settings: EngineSettings = EngineSettings(),
        on_report: Callable[[Node], None] | None = None,
        on_phase: Callable[[str], None] | None = None,
    ) -> None:
        if not operators:
            raise ValueError("the search needs at least one operator")
        if not backends:
            raise ValueError(
                f"none of the spec's backends {spec.backends} can run on platform {platform.name} "
                f"(supports: {platform.backends})"
            )
        self.spec = spec
        self.platform = platform
        self.graph = graph
        self.evaluator = evaluator
        self.operators = list(operators)
        self.policy = policy
        self.scheduler = scheduler
        self.termination = termination
        self.eval_settings = eval_settings
        self.backends = backends
        self.settings = settings
        self.on_report = on_report
        self.on_phase = on_phase  # told "baselines", "seeds", then "search" as each begins
        self.rng = random.Random(settings.seed)
        self.dispatch = Dispatch(operators, policy, scheduler, graph, self.rng, eval_settings.strict)
        self._best_objective: float | None = None
        self._since_improvement = 0
        self._session_evaluations = 0
        self._baselines: dict[str, Baseline] = {}
        self._jobs_at = (-1, 0)  # (graph revision, jobs handed out at it): seeds the next job's draws
        self.baseline_s = 0.0
        self.seed_s = 0.0

    # ----------------------------------------------------------------- state
    def _llm_totals(self) -> tuple[float, int, int]:
        """(cost, calls, tokens) of the operators' LLM accounting: the run's, every session included."""
        seen: dict[int, Any] = {}
        for operator in self.operators:
            accounting = getattr(operator, "accounting", None)
            if accounting is not None and callable(getattr(accounting, "totals", None)):
                seen[id(accounting)] = accounting.totals()
        totals = list(seen.values())
        return (
            sum(float(t.cost_usd) for t in totals),
            sum(int(t.calls) for t in totals),
            sum(int(t.prompt_tokens) + int(t.completion_tokens) for t in totals),
        )

    def _state(self, elapsed_s: float, idle: bool) -> SearchState:
        best = self.graph.best()
        cost, calls, tokens = self._llm_totals()
        return SearchState(
            evaluations=len(self.graph.evaluated()),
            elapsed_s=elapsed_s,
            best=best.fitness if best else None,
            evaluations_since_improvement=self._since_improvement,
            # Barren rounds only mean "exhausted" once nothing is waiting for evaluation: a report
            # still in flight can give the operators new parents.
            proposals_exhausted=idle and self.dispatch.barren_rounds >= self.settings.max_barren_rounds,
            llm_cost_usd=cost,
            llm_calls=calls,
            llm_tokens=tokens,
        )

    def _reseed(self) -> None:
        """Seed the next job's random draws from the graph's revision (and the jobs already handed out
        at it), not from the draws of earlier jobs: a resumed run then chooses at each state what the
        uninterrupted run chose there, and sends the prompts it sent (whose replies are cached)."""
        revision = self.graph.revision
        jobs = self._jobs_at[1] + 1 if self._jobs_at[0] == revision else 0
        self._jobs_at = (revision, jobs)
        self.rng.seed(f"{self.settings.seed}:{revision}:{jobs}")

    def _load_baselines(self) -> dict[str, Baseline]:
        for event in reversed(self.graph.events("baselines")):
            payload = event.get("payload", event)
            return {k: Baseline.from_json(v) for k, v in payload["shapes"].items()}
        baselines = self.evaluator.baselines(self.spec, self.platform.name)
        self.graph.record_event("baselines", {"shapes": {k: v.to_json() for k, v in baselines.items()}})
        return baselines

    # ------------------------------------------------------------- proposals
    def _context(self, parents: ParentSet) -> ProposalContext:
        return ProposalContext(
            spec=self.spec,
            platform=self.platform,
            graph=self.graph,
            parents=parents,
            rng=random.Random(self.rng.random()),  # each call its own stream: threads must not share one
            backends=self.backends,
            budget_hint=self.settings.children_per_proposal,
        )

    def _work(self, operator: Operator, parents: ParentSet) -> Callable[[], list[Candidate]]:
        """What the pool runs for one job: a `Prepares` operator reads the graph here, now."""
        ctx = self._context(parents)
        if not isinstance(operator, Prepares):
            return lambda: operator.propose(ctx)
        try:
            return operator.prepare(ctx)
        except Exception as exc:  # an operator bug must not end the run: the job fails in the pool
            error = exc
            log.debug("operator %s failed to prepare", operator.name, exc_info=True)

            def fail() -> list[Candidate]:
                raise error

            return fail

    def _accept(self, candidates: list[Candidate]) -> list[Candidate]:
        """Add new candidates to the graph; returns those that were new (and runnable here)."""
        fresh = []
        for candidate in candidates:
            if candidate.backend not in self.backends:
                log.debug("dropping %s candidate: backend not runnable here", candidate.backend)
                continue
            if self.graph.add_candidate(candidate):
                fresh.append(candidate)
        return fresh

    def _accept_children(self, candidates: list[Candidate]) -> list[Candidate]:
        fresh = self._accept(candidates)
        for candidate in fresh:
            self.dispatch.ready.add_child(candidate)
        return fresh

    def _seed(self) -> None:
        if self.graph.events("seeded"):
            return  # resumed run: seeds were proposed before
        by_operator = []
        for operator in self.dispatch.seed_operators():
            try:
                fresh = self._accept(operator.propose(self._context(())))
            except Exception:  # an operator bug must not end the run
                log.exception("seed operator %s failed", operator.name)
                fresh = []
            log.info("seed operator %s proposed %d new candidate(s)", operator.name, len(fresh))
            by_operator.append(fresh)
        self.dispatch.ready.add_seeds(by_operator)
        self.graph.record_event("seeded", {"candidates": len(self.graph)})

    def _follow_ups(self) -> None:
        def propose(operator: Operator, parents: ParentSet) -> list[Candidate]:
            try:
                return self._accept(operator.propose(self._context(parents)))
            except Exception:  # an operator bug must not end the run
                log.exception("follow-up of operator %s failed", operator.name)
                return []

        self.dispatch.follow_ups(propose)

    # ------------------------------------------------------------ evaluation
    def _submit(self, candidate: Candidate) -> Future[EvalReport]:
        incumbent = (
            incumbent_ms(self.graph, self.spec, candidate) if self.eval_settings.race_margin > 0 else None
        )
        request = EvalRequest(candidate, self.spec, self.platform.name, self.eval_settings, incumbent)
        return self.evaluator.submit(request)

    def _record(self, candidate: Candidate, report: EvalReport) -> Node:
        fitness = score(report, self._baselines)
        self.graph.record(candidate.id, report, fitness)
        self._session_evaluations += 1
        cost = report.wall_s + float(candidate.metadata.get("llm_cost_s", 0.0))
        self.dispatch.evaluated(candidate, fitness, cost)
        if fitness.feasible and (
            self._best_objective is None or fitness.objective > self._best_objective * 1.0001
        ):
            self._best_objective = fitness.objective
            self._since_improvement = 0
        else:
            self._since_improvement += 1
        node = self.graph.node(candidate.id)
        if self.on_report:
            self.on_report(node)
        return node

    # ------------------------------------------------------------------ loop
    def run(self) -> SearchOutcome:
        # The wall-clock budget is for searching: baseline measurement (torch.compile can take tens
        # of seconds per shape) and the seed proposals (Inductor's captures of a level-3 network take
        # one to three minutes) are reported separately and do not eat into it (when seeding counted, some
        # level-3 problems spent their budget before any evaluation: experiments/full_sweep_h200).
        self._phase("baselines")
        baseline_start = time.monotonic()
        self._baselines = self._load_baselines()
        self.baseline_s = time.monotonic() - baseline_start
        best = self.graph.best()
        self._best_objective = best.fitness.objective if best and best.fitness else None
        for node in self.graph.pending():  # resume: proposed, never evaluated
            self.dispatch.ready.add_pending(node.candidate)
        self._phase("seeds")
        seed_start = time.monotonic()
        self._seed()
        self.seed_s = time.monotonic() - seed_start
        self._phase("search")
        start = time.monotonic()
        evaluations: dict[Future[EvalReport], Candidate] = {}
        proposals: dict[Future[list[Candidate]], str] = {}
        pool = ThreadPoolExecutor(
            max_workers=self.settings.proposal_concurrency, thread_name_prefix="propose"
        )
        reason = ""
        try:
            while True:
                idle = not evaluations and not self.dispatch
                stop, reason = self.termination.check(self._state(time.monotonic() - start, idle))
                if stop:
                    break
                self._follow_ups()
                while len(evaluations) < self.evaluator.capacity:
                    candidate = self.dispatch.next_candidate()
                    if candidate is None:
                        break
                    evaluations[self._submit(candidate)] = candidate
                # Once every operator has given nothing since the last report, wait for the next one
                # before asking again: until then the graph is unchanged and operators would only
                # repeat themselves (and LLM calls cost).
                stale = bool(evaluations) and self.dispatch.all_barren()
                # Children are asked for while seeds still wait (the two take turns in the queue), but
                # only once some report exists: until then operators that need parents can only decline.
                can_ask = (
                    not self.dispatch.ready.seeds
                    or self._session_evaluations > 0
                    or bool(self.graph.evaluated())
                )
                want_more = (
                    not stale
                    and can_ask
                    and self.dispatch.ready.children + len(evaluations) < 2 * self.evaluator.capacity
                )
                while want_more and len(proposals) < self.settings.proposal_concurrency:
                    self._reseed()
                    job = self.dispatch.next_job(waiting=bool(evaluations))
                    if job is None:
                        break
                    operator, parents = job
                    proposals[pool.submit(self._work(operator, parents))] = operator.name
                    want_more = (
                        self.dispatch.ready.children + len(evaluations) + len(proposals)
                        < 2 * self.evaluator.capacity
                    )
                if not evaluations and not proposals and not self.dispatch:
                    resting = "; ".join(f"{k} rests: {v}" for k, v in self.dispatch.resting().items())
                    reason = "no operator can propose anything new" + (f" ({resting})" if resting else "")
                    break
                pending: list[Future[Any]] = [*evaluations, *proposals]
                done, _ = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                for future in done:
                    if future in evaluations:
                        candidate = evaluations.pop(future)  # type: ignore[arg-type]
                        try:
                            report = future.result()
                        except Exception as exc:  # the evaluator itself broke: record, go on
                            report = _crash_report(candidate, exc)
                        self._record(candidate, report)  # type: ignore[arg-type]
                    else:
                        name = proposals.pop(future)  # type: ignore[arg-type]
                        try:
                            fresh = len(self._accept_children(future.result()))  # type: ignore[arg-type]
                        except Exception:
                            log.exception("operator %s failed", name)
                            fresh = 0
                        self.dispatch.proposal_done(name, fresh)
            self._drain(evaluations)
        finally:
            # Proposals handed out are waited for, up to `proposal_drain_s`. A proposal left running (an
            # Inductor capture of a network, a minute or more) held the tracing lock into the next problem
            # of a sweep and crashed the interpreter at exit (experiments/full_sweep_h200); the bound keeps
            # a slow LLM call from stretching the run by its whole timeout. None is cancelled: one is
            # handed out only to a free worker, so a cancel dropped it only where that worker had not yet
            # picked it up, and whether the run sent its LLM call depended on thread timing (a resumed
            # run's prompts then differed from an uninterrupted one's).
            pool.shutdown(wait=False)
            running = [future for future in proposals if not future.done()]
            drain_s = self.settings.proposal_drain_s
            if running and drain_s > 0:
                log.info("waiting up to %.0f s for %d running proposal(s)", drain_s, len(running))
            waited = time.monotonic()
            _, still = wait(running, timeout=drain_s)
            if running and not still:
                log.info("waited %.1f s for the running proposal(s)", time.monotonic() - waited)
            self._keep_finished(proposals)
            if still:
                log.log(
                    logging.WARNING if drain_s > 0 else logging.INFO,
                    "returning with %d proposal(s) still running",
                    len(still),
                )
            else:
                pool.shutdown(wait=True)  # every worker is idle: join them
        return SearchOutcome(
            best=self.graph.best(),
            stop_reason=reason,
            evaluations_this_session=self._session_evaluations,
            elapsed_s=time.monotonic() - start,
            baselines=self._baselines,
            scheduler=self.scheduler.to_json(),
        )

    def _phase(self, name: str) -> None:
        if self.on_phase:
            self.on_phase(name)

    def _keep_finished(self, proposals: dict[Future[list[Candidate]], str]) -> None:
        """Children of proposals that finished after the stop go into the graph, unevaluated: they were
        paid for (an LLM call), and a resumed run evaluates them first, as the run would have."""
        for future, name in proposals.items():
            if not future.done() or future.cancelled() or future.exception() is not None:
                continue
            try:
                kept = self._accept(future.result())
            except Exception:
                log.exception("children of operator %s not kept", name)
                continue
            if kept:
                log.info("kept %d unevaluated child(ren) of %s for a resume", len(kept), name)

    def _drain(self, evaluations: dict[Future[EvalReport], Candidate]) -> None:
        """Evaluations already running are paid for: wait for them and record what they say."""
        if not evaluations:
            return
        done, not_done = wait(list(evaluations), timeout=self.settings.drain_timeout_s)
        for future in done:
            candidate = evaluations[future]
            try:
                report = future.result()
            except Exception as exc:
                report = _crash_report(candidate, exc)
            self._record(candidate, report)
        if not_done:
            log.warning(
                "%d evaluation(s) still running at the end; they stay pending for a resume", len(not_done)
            )


def incumbent_ms(graph: SearchGraph, spec: KernelSpec, candidate: Candidate) -> float | None:
    """What racing measures `candidate` against: the median, at a one-shape spec's shape, of the best
    fully timed kernel of its kind (same backend, own kernels only or not). Within its kind a raced
    loser can then never be the best, so every reported kernel (best, best_strict, best of each
    backend) keeps its full trial count."""
    if len(spec.shapes) != 1:
        return None
    from kernelevolve.eval.own_kernels import kernel_use

    def kind(of: Candidate) -> tuple[str, bool]:
        return of.backend, kernel_use(of).own_kernels_only

    wanted = kind(candidate)
    incumbent = graph.best_where(
        lambda node: (
            node.report is not None
            and CUT_SHORT_FLAG not in node.report.flags
            and kind(node.candidate) == wanted
        )
    )
    timing = incumbent.report.latency.get(spec.shapes[0].name) if incumbent and incumbent.report else None
    return timing.median_ms if timing is not None else None
