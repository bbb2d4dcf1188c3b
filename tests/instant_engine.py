"""An engine on made-up evaluations, for tests of what the search chooses (no harness, no kernels).

Candidates are comments (`# name`); an evaluator reports each correct at once, with the times its
`measure` gives. `run_engine` wires one up the way the app does, on the CPU platform's softmax spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from kernelevolve.platforms import load_platform
from kernelevolve.search.engine import Engine, EngineSettings, SearchOutcome
from kernelevolve.search.graph import SearchGraph
from kernelevolve.search.selection import build_selection
from kernelevolve.search.termination import build_termination
from kernelevolve.specs.loading import resolve_spec
from kernelevolve.types import (
    Baseline,
    Candidate,
    EvalReport,
    EvalRequest,
    EvalSettings,
    KernelSpec,
    Status,
    TimingStats,
)
from kernelevolve.variation.scheduler import OperatorScheduler


def timing(ms: float) -> TimingStats:
    return TimingStats(ms, ms, 0.0, ms, ms, 10)


class InstantEvaluator:
    """Every candidate correct at once, at `measure(candidate)` = (milliseconds, evaluation seconds)."""

    capacity = 1

    def __init__(self, spec: KernelSpec) -> None:
        self.shape = spec.shapes[0].name

    def measure(self, candidate: Candidate) -> tuple[float, float]:
        raise NotImplementedError

    def submit(self, request: EvalRequest) -> Future[EvalReport]:
        candidate = request.candidate
        ms, wall_s = self.measure(candidate)
        future: Future[EvalReport] = Future()
        future.set_result(
            EvalReport(candidate.id, Status.OK, latency={self.shape: timing(ms)}, wall_s=wall_s)
        )
        return future

    def baselines(self, spec: KernelSpec, platform: str) -> dict[str, Baseline]:
        return {self.shape: Baseline(eager=timing(1.0))}

    def close(self) -> None:
        pass


def softmax_spec() -> KernelSpec:
    return resolve_spec("softmax", load_platform("cpu"))


def make_engine(
    graph_path: Path,
    spec: KernelSpec,
    evaluator: InstantEvaluator,
    operators: Sequence[Any],
    termination: dict[str, Any],
    seed: int = 0,
    **greedy: Any,
) -> Engine:
    """A greedy search over `operators`, stopped by the `termination` config block."""
    return Engine(
        spec=spec,
        platform=load_platform("cpu"),
        graph=SearchGraph(graph_path),
        evaluator=evaluator,
        operators=list(operators),
        policy=build_selection("greedy", **greedy),
        scheduler=OperatorScheduler(strategy="ucb"),
        termination=build_termination(termination),
        eval_settings=EvalSettings(),
        backends=("triton",),
        settings=EngineSettings(seed=seed, progress=False),
    )


def run_engine(
    graph_path: Path,
    spec: KernelSpec,
    evaluator: InstantEvaluator,
    operators: Sequence[Any],
    max_evaluations: int,
    seed: int = 0,
    **greedy: Any,
) -> SearchOutcome:
    """A greedy search over `operators` until `max_evaluations`; `greedy`: the policy's options."""
    termination = {"max_evaluations": max_evaluations}
    return make_engine(graph_path, spec, evaluator, operators, termination, seed, **greedy).run()
