"""Operators' follow-ups (`interfaces.FollowsUp`): the engine hands them out before the scheduler's
choice, each parent set once (graph replay of a host-bound kernel near the best is the one in use)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from kernelevolve.search.graph import SearchGraph
from kernelevolve.search.interfaces import ParentSet, ProposalContext
from kernelevolve.types import Candidate, EvalReport, EvalRequest
from tests.instant_engine import InstantEvaluator, run_engine, softmax_spec


class _Times(InstantEvaluator):
    """`# slow` takes 4 ms, `# fast` 2 ms, a follow-up child half its parent's time, anything else 3 ms."""

    def measure(self, candidate: Candidate) -> tuple[float, float]:
        text = candidate.source
        ms = 4.0 if "slow" in text else 2.0 if "fast" in text else 3.0
        return ms / 2 ** text.count("followed"), 0.1


class _Seeder:
    name, arity = "seeder", 0

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        return [Candidate(f"# {tag}\n", "triton", self.name, "seed") for tag in ("slow", "fast")]


class _Tuner:
    name, arity = "tune", 1

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        parent = ctx.graph.node(ctx.parents[0]).candidate
        child = f"{parent.source}tuned {ctx.rng.randrange(1 << 30)}\n"
        return [Candidate(child, "triton", self.name, "tune", (parent.id,))]


class _FollowsTheBestSeed:
    """Always names the best evaluated seed as its follow-up (the engine must hand each parent set out
    once, although it keeps being named), and proposes only for parents it named. The scheduler may
    also pick it as an ordinary operator: `asked` holds each parent's first proposal."""

    name, arity = "follow", 1

    def __init__(self) -> None:
        self.named: list[str] = []
        self.asked: list[tuple[str, int]] = []  # (parent's first line, evaluations when first asked)
        self.asked_at: dict[str, float] = {}  # parent's first line -> when first asked

    def follow_up(self, graph: SearchGraph) -> ParentSet | None:
        for node in graph.top(len(graph.feasible())):
            if node.candidate.operator == "seeder":
                self.named.append(node.id)
                return (node.id,)
        return None

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if ctx.parents[0] not in self.named:
            return []
        parent = ctx.graph.node(ctx.parents[0]).candidate
        first_line = parent.source.splitlines()[0]
        if first_line not in self.asked_at:
            self.asked.append((first_line, len(ctx.graph.evaluated())))
            self.asked_at[first_line] = time.monotonic()
        return [Candidate(f"{parent.source}followed\n", "triton", self.name, "follow", (parent.id,))]


def test_follow_ups_come_first_and_each_parent_set_once(tmp_path: Path) -> None:
    spec = softmax_spec()
    follow = _FollowsTheBestSeed()
    outcome = run_engine(
        tmp_path / "graph.jsonl", spec, _Times(spec), [_Seeder(), _Tuner(), follow], max_evaluations=8
    )
    # The best seed at each point is followed up as soon as it is known. One evaluation at a time: the
    # slow seed is the only one at first, and its follow-up's child is evaluated next, before the fast
    # seed; the fast seed's child right after it.
    assert follow.asked == [("# slow", 1), ("# fast", 3)]
    evaluated = [node.candidate.source for node in _in_evaluation_order(tmp_path / "graph.jsonl")]
    assert evaluated[:4] == ["# slow\n", "# slow\nfollowed\n", "# fast\n", "# fast\nfollowed\n"]
    assert outcome.best is not None and outcome.best.candidate.source == "# fast\nfollowed\n"


def _in_evaluation_order(path: Path) -> list[Any]:
    graph = SearchGraph.load(path)
    order = [event["candidate_id"] for event in _report_records(path)]
    return [graph.node(candidate_id) for candidate_id in order]


def _report_records(path: Path) -> list[dict[str, Any]]:
    import json

    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [record["report"] for record in records if record.get("report")]


class _Blocking:
    """An operator whose every proposal blocks for 2 s (or until released): it holds the pool's slots."""

    name, arity = "blocking", 1

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        self.calls += 1
        self.release.wait(2.0)
        return []


class _FastSeedLate(_Times):
    """Two evaluations at once, as a GPU's two evaluation children; the fast seed's report comes 0.5 s
    after the others, when slow proposals hold both slots of the proposal pool."""

    capacity = 2

    def submit(self, request: EvalRequest) -> Future[EvalReport]:
        done = super().submit(request)
        if request.candidate.source != "# fast\n":
            return done
        late: Future[EvalReport] = Future()
        threading.Timer(0.5, lambda: late.set_result(done.result())).start()
        return late


def test_follow_ups_do_not_wait_for_the_proposal_pool(tmp_path: Path) -> None:
    """Slow proposals (a network's Inductor capture) fill every slot of the pool; a follow-up is
    proposed by the engine itself, so the replay of a host-bound seed comes as soon as its report does,
    not when a slot frees (2 s later here)."""
    spec = softmax_spec()
    follow, blocking = _FollowsTheBestSeed(), _Blocking()
    started = time.monotonic()
    try:
        run_engine(
            tmp_path / "graph.jsonl",
            spec,
            _FastSeedLate(spec),
            [_Seeder(), blocking, follow],
            max_evaluations=4,
        )
    finally:
        blocking.release.set()
    assert blocking.calls >= 2  # both slots were busy
    assert [line for line, _ in follow.asked] == ["# slow", "# fast"]
    assert follow.asked_at["# fast"] - started < 1.5
