"""Operators' follow-ups (`interfaces.FollowsUp`): the engine hands them out before the scheduler's
choice, each parent set once (graph replay of a host-bound kernel near the best is the one in use)."""

from __future__ import annotations

from pathlib import Path

from kernelevolve.graph import SearchGraph
from kernelevolve.interfaces import ParentSet, ProposalContext
from kernelevolve.types import Candidate
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
    """Always names the best evaluated seed as its follow-up, and proposes only from follow-ups (so
    `asked` is exactly what the engine handed out); the engine must hand each parent set out once."""

    name, arity = "follow", 1

    def __init__(self) -> None:
        self.named: set[str] = set()
        self.asked: list[tuple[str, int]] = []  # (parent's first line, evaluations when asked)

    def follow_up(self, graph: SearchGraph) -> ParentSet | None:
        for node in graph.top(len(graph.feasible())):
            if node.candidate.operator == "seeder":
                self.named.add(node.id)
                return (node.id,)
        return None

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if ctx.parents[0] not in self.named:
            return []
        parent = ctx.graph.node(ctx.parents[0]).candidate
        self.asked.append((parent.source.splitlines()[0], len(ctx.graph.evaluated())))
        return [Candidate(f"{parent.source}followed\n", "triton", self.name, "follow", (parent.id,))]


def test_follow_ups_come_first_and_each_parent_set_once(tmp_path: Path) -> None:
    spec = softmax_spec()
    follow = _FollowsTheBestSeed()
    outcome = run_engine(
        tmp_path / "graph.jsonl", spec, _Times(spec), [_Seeder(), _Tuner(), follow], max_evaluations=8
    )
    # The best seed at each point is followed up as soon as it is known, and never twice although
    # follow_up keeps naming it. One evaluation at a time: the slow seed is the only one at first, and
    # its follow-up goes before the fast seed (children and seeds take turns in the queue).
    assert follow.asked == [("# slow", 1), ("# fast", 3)]
    assert outcome.best is not None and outcome.best.candidate.source == "# fast\nfollowed\n"
