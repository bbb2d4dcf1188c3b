"""Seeds and children take turns for evaluation (the ready queue, and the engine using it)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from kernelevolve.search.engine import Engine
from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.search.ready_queue import ReadyQueue
from kernelevolve.types import (
    Candidate,
    KernelSpec,
)
from tests.instant_engine import InstantEvaluator, make_engine, run_engine, softmax_spec


def _candidate(name: str, operator: str = "seeder", parents: tuple[str, ...] = ()) -> Candidate:
    return Candidate(f"# {name}\n", "triton", operator, "seed" if not parents else "tune", parents)


def test_seeds_are_taken_one_from_each_operator_in_turn() -> None:
    queue = ReadyQueue()
    a = [_candidate(f"a{i}", "a") for i in range(3)]
    b = [_candidate("b0", "b")]
    c = [_candidate(f"c{i}", "c") for i in range(2)]
    queue.add_seeds([a, [], b, c])
    order = [queue.pop().source.strip("# \n") for _ in range(len(queue))]
    assert order == ["a0", "b0", "c0", "a1", "c1", "a2"]


def test_a_child_goes_ahead_of_waiting_seeds_then_they_alternate() -> None:
    queue = ReadyQueue()
    queue.add_seeds([[_candidate(f"s{i}") for i in range(4)]])
    assert queue.pop().source == "# s0\n"
    for name in ("c0", "c1", "c2", "c3"):
        queue.add_child(_candidate(name, "tune", ("parent",)))
    order = [queue.pop().source.strip("# \n") for _ in range(len(queue))]
    assert order == ["c0", "s1", "c1", "s2", "c2", "s3", "c3"]
    with pytest.raises(IndexError):
        queue.pop()


def test_an_urgent_child_goes_before_everything_waiting() -> None:
    queue = ReadyQueue()
    queue.add_seeds([[_candidate(f"s{i}") for i in range(3)]])
    queue.add_child(_candidate("c0", "tune", ("parent",)))
    assert queue.pop().source == "# c0\n"  # the seeds' turn next...
    queue.add_child(_candidate("c1", "tune", ("parent",)))
    queue.add_urgent(_candidate("replay", "graph_replay", ("parent",)))  # ...but the follow-up goes first
    order = [queue.pop().source.strip("# \n") for _ in range(len(queue))]
    assert order == ["replay", "s0", "c1", "s1", "s2"]


def test_pending_candidates_of_a_resumed_run_go_back_to_their_own_queue() -> None:
    queue = ReadyQueue()
    queue.add_pending(_candidate("seed"))
    queue.add_pending(_candidate("child", "tune", ("p",)))
    assert (queue.seeds, queue.children, len(queue)) == (1, 1, 2)


# ------------------------------------------------------------------ the engine


class _OrderingEvaluator(InstantEvaluator):
    """Notes the order of evaluation; a kernel is faster the more tune steps it descends from."""

    def __init__(self, spec: KernelSpec) -> None:
        super().__init__(spec)
        self.order: list[str] = []

    def measure(self, candidate: Candidate) -> tuple[float, float]:
        self.order.append(candidate.source.strip("# \n").split("\n")[0])
        return 1.0 / (1 + candidate.source.count("tuned")), 1.0


class _Seeder:
    arity = 0

    def __init__(self, name: str, count: int) -> None:
        self.name, self.count = name, count

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        return [_candidate(f"{self.name}{i}", self.name) for i in range(self.count)]


class _Tuner:
    name = "tune"
    arity = 1

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        parent = ctx.graph.node(ctx.parents[0]).candidate
        first_line = parent.source.split("\n")[0]
        return [Candidate(f"{first_line} tuned\n{parent.source}", "triton", self.name, "tune", (parent.id,))]


def test_the_engine_evaluates_children_between_the_seeds_it_still_has(tmp_path: Path) -> None:
    """Six compiler-seed variants used to be evaluated before any child: on a level-3 network a 40 s
    budget ended there. Now seeds from different operators come in turn, and children alternate with them."""
    spec = softmax_spec()
    evaluator = _OrderingEvaluator(spec)
    outcome = run_engine(
        tmp_path / "graph.jsonl",
        spec,
        evaluator,
        [_Seeder("compiler", 6), _Seeder("template", 2), _Tuner()],
        max_evaluations=8,
        beam_width=1,
        epsilon=0.0,
    )
    assert outcome.evaluations_this_session == 8
    order = evaluator.order
    assert order[:2] == ["compiler0", "template0"]
    tuned = [i for i, name in enumerate(order) if name.endswith("tuned")]
    assert tuned and tuned[0] <= 3, order  # a child is evaluated long before the eight seeds are done
    seeds = [name for name in order if not name.endswith("tuned")]
    assert len(seeds) >= 4 and len(order) - len(seeds) >= 3, order  # the budget is shared


class _SlowSeeder(_Seeder):
    """Seeds that take longer to propose than the whole search budget (a level-3 network's captures)."""

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        time.sleep(0.5)
        return super().propose(ctx)


def test_the_wall_clock_counts_from_the_seeds_so_slow_seeding_still_gets_evaluations(tmp_path: Path) -> None:
    spec = softmax_spec()
    evaluator = _OrderingEvaluator(spec)
    engine = make_engine(
        tmp_path / "graph.jsonl", spec, evaluator, [_SlowSeeder("slow", 3)], {"wall_clock_s": 0.3}
    )
    outcome = engine.run()
    assert evaluator.order, "the seeds' proposal time used up the budget before any evaluation"
    assert outcome.stop_reason.startswith(("wall_clock", "no operator"))
    assert engine.seed_s >= 0.5 and outcome.elapsed_s < engine.seed_s + 0.3 + 2.0


class _SlowTuner(_Tuner):
    """A child proposal still running when the budget ends (an Inductor capture of a network)."""

    def __init__(self, seconds: float = 1.0) -> None:
        self.finished = threading.Event()
        self.seconds = seconds

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        time.sleep(self.seconds)
        self.finished.set()
        return super().propose(ctx)


def _stopping_while(tuner: _SlowTuner, tmp_path: Path) -> Engine:
    """An engine with one seed whose 0.3 s budget ends while `tuner` is still proposing its child."""
    spec = softmax_spec()
    seeds_then_tune = [_Seeder("s", 1), tuner]
    return make_engine(
        tmp_path / "graph.jsonl", spec, _OrderingEvaluator(spec), seeds_then_tune, {"wall_clock_s": 0.3}
    )


def test_the_engine_returns_only_once_its_running_proposals_are_done(tmp_path: Path) -> None:
    """A proposal thread left running held the tracing lock into the sweep's next problem and crashed the
    interpreter at exit (Dynamo in a worker thread during shutdown, on the H200)."""
    tuner = _SlowTuner()
    _stopping_while(tuner, tmp_path).run()
    assert tuner.finished.is_set()
    assert not [t for t in threading.enumerate() if t.name.startswith("propose")]


@pytest.mark.parametrize("drain_s", [0.2, 0.0])
def test_the_wait_for_running_proposals_is_bounded(tmp_path: Path, drain_s: float) -> None:
    """A proposal slower than the drain bound (an LLM call near its timeout) does not hold the run; with
    no bound (a sweep's isolated problem, whose process ends right after) the run does not wait at all."""
    tuner = _SlowTuner(seconds=3.0)
    engine = _stopping_while(tuner, tmp_path)
    engine.settings = replace(engine.settings, proposal_drain_s=drain_s)
    start = time.monotonic()
    outcome = engine.run()
    assert time.monotonic() - start < 2.5 and not tuner.finished.is_set()
    # the search's own 0.3 s, the engine loop's 1 s tick, the bound: not the proposal's 3 s
    assert outcome.elapsed_s < 0.3 + 1.0 + drain_s + 0.5
    tuner.finished.wait(5)  # let it end before the next test
