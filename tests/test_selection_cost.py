"""Selection weighs parents by what their evaluations cost (kernelevolve.search.selection.cost).

The case behind it: the CPU softmax demo evaluates its templates in under a second in the Triton
interpreter and Inductor's kernels (the compiler seed) in 60 s; with the seed in the beam, tune spent
three of the demo's four minutes on its children, all hundreds of times slower than the templates.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from kernelevolve.search.graph import SearchGraph
from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.search.selection import GreedyPolicy, build_selection
from kernelevolve.search.selection.cost import MIN_EVALUATION_COST_S, cost_discount, evaluation_cost
from kernelevolve.types import (
    Candidate,
    EvalReport,
    FitnessValue,
    KernelSpec,
    Status,
)
from tests.instant_engine import InstantEvaluator, run_engine, softmax_spec


def _add(
    graph: SearchGraph, tag: str, objective: float | None, wall_s: float = 0.0, status: Status = Status.OK
) -> str:
    """A node whose evaluation took `wall_s` (objective None: pending; status other than OK: infeasible)."""
    candidate = Candidate(f"# {tag}\n", "triton", "seed")
    graph.add_candidate(candidate)
    if objective is not None:
        report = EvalReport(candidate.id, status, wall_s=wall_s)
        graph.record(candidate.id, report, FitnessValue(status is Status.OK, objective))
    return candidate.id


def _demo_graph() -> tuple[SearchGraph, dict[str, str]]:
    """The CPU softmax demo after its first seeds: three cheap kernels and the slow compiler seed, all
    in a beam of four, and a past win replayed for another problem (figures from a run of the demo)."""
    graph = SearchGraph()
    ids = {
        "best": _add(graph, "best", 3.0, wall_s=0.6),
        "second": _add(graph, "second", 2.0, wall_s=0.2),
        "third": _add(graph, "third", 1.5, wall_s=0.7),
        "compiler": _add(graph, "compiler", 0.01, wall_s=62.7),
        "outside": _add(graph, "outside", 0.0, wall_s=0.1, status=Status.INCORRECT),
    }
    return graph, ids


def _picks(policy: GreedyPolicy, graph: SearchGraph, draws: int = 4000) -> Counter[str]:
    return Counter(s[0] for s in policy.select(graph, random.Random(0), draws, 1))


def test_cost_of_a_node_is_its_evaluation_with_a_floor() -> None:
    graph = SearchGraph()
    slow, fast = _add(graph, "slow", 1.0, wall_s=62.7), _add(graph, "fast", 1.0, wall_s=0.2)
    unknown, pending = _add(graph, "unknown", 1.0), _add(graph, "pending", None)
    assert evaluation_cost(graph.node(slow)) == 62.7
    assert evaluation_cost(graph.node(fast)) == MIN_EVALUATION_COST_S  # sub-second: overhead, not cost
    assert evaluation_cost(graph.node(unknown)) is None and evaluation_cost(graph.node(pending)) is None
    assert cost_discount(graph.node(slow), 2.0) == pytest.approx(2.0 / 62.7)
    assert cost_discount(graph.node(slow), 2.0, exponent=0.5) == pytest.approx((2.0 / 62.7) ** 0.5)
    assert cost_discount(graph.node(slow), 2.0, exponent=0.0) == 1.0
    assert cost_discount(graph.node(fast), 2.0) == 1.0  # cheaper than the reference: never a bonus
    assert cost_discount(graph.node(slow), None) == cost_discount(graph.node(unknown), 2.0) == 1.0


def test_greedy_rarely_expands_a_beam_member_that_costs_a_hundred_times_the_best() -> None:
    graph, ids = _demo_graph()
    blind = _picks(GreedyPolicy(beam_width=4, epsilon=0.1, cost_exponent=0.0), graph)
    aware = _picks(GreedyPolicy(beam_width=4, epsilon=0.1), graph)
    assert blind[ids["compiler"]] > 0.08 * 4000  # rank weight 1 of 10, plus exploration
    assert aware[ids["compiler"]] < 0.005 * 4000  # (1/62 of both): about 0.2%
    # The cheap members keep their rank order, and exploration still reaches beyond the beam.
    assert aware[ids["best"]] > aware[ids["second"]] > aware[ids["third"]] > 0
    assert aware[ids["outside"]] > 0


def test_an_expensive_best_node_is_never_discounted() -> None:
    """The best kernel is refined whatever it costs (on a GPU, one whose compile takes 100 s):
    only dearer nodes than the best lose weight, so here nothing changes."""
    graph = SearchGraph()
    best = _add(graph, "best", 3.0, wall_s=100.0)
    cheap = [_add(graph, f"cheap{i}", 2.0 - 0.1 * i, wall_s=5.0) for i in range(3)]
    blind = _picks(GreedyPolicy(beam_width=4, epsilon=0.0, cost_exponent=0.0), graph)
    assert _picks(GreedyPolicy(beam_width=4, epsilon=0.0), graph) == blind
    assert blind[best] > max(blind[c] for c in cheap)


def test_greedy_rejects_a_negative_cost_exponent() -> None:
    with pytest.raises(ValueError, match="cost_exponent"):
        GreedyPolicy(cost_exponent=-1.0)
    assert build_selection("greedy", cost_exponent=0.5).cost_exponent == 0.5  # type: ignore[attr-defined]


# ------------------------------------------------------------------ the engine


class _CostedEvaluator(InstantEvaluator):
    """A kernel and its tuned children cost (`wall_s`) what their seed does, and each tune step makes a
    kernel 0.8-1.3 times as fast as its parent."""

    def __init__(self, spec: KernelSpec, seeds: dict[str, tuple[float, float]]) -> None:
        super().__init__(spec)
        self.seeds = seeds  # seed name -> (milliseconds, evaluation seconds)
        self.spent: Counter[str] = Counter()  # seed name -> evaluation seconds of its line

    def measure(self, candidate: Candidate) -> tuple[float, float]:
        lines = candidate.source.splitlines()
        seed = lines[0].strip("# ")
        ms, wall_s = self.seeds[seed]
        for line in lines[1:]:
            if line.startswith("tuned "):
                ms /= 0.8 + int(line.split()[1]) % 51 / 100
        self.spent[seed] += wall_s
        return ms, wall_s


class _Seeder:
    arity = 0

    def __init__(self, name: str, seeds: list[str]) -> None:
        self.name, self.seeds = name, seeds

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        return [Candidate(f"# {seed}\n", "triton", self.name, "seed") for seed in self.seeds]


class _Tuner:
    name = "tune"
    arity = 1

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        parent = ctx.graph.node(ctx.parents[0]).candidate
        return [
            Candidate(
                f"{parent.source}tuned {ctx.rng.randrange(1 << 30)}\n",
                "triton",
                self.name,
                "tune",
                (parent.id,),
            )
            for _ in range(ctx.budget_hint)
        ]


def _run_demo(tmp_path: Path, cost_exponent: float, seed: int) -> float:
    """The demo's shape in miniature; returns the evaluation seconds spent on the compiler seed's line."""
    spec = softmax_spec()
    evaluator = _CostedEvaluator(
        spec,
        # name -> (ms, evaluation s): templates fast to run and evaluate, Inductor's code 100x slower
        {"template0": (1.0, 0.6), "template1": (1.5, 0.5), "fusion0": (2.0, 0.3), "compiler0": (100.0, 60.0)},
    )
    outcome = run_engine(
        tmp_path / f"graph-{cost_exponent}-{seed}.jsonl",
        spec,
        evaluator,
        [
            _Seeder("template", ["template0", "template1"]),
            _Seeder("fusion_seed", ["fusion0"]),
            _Seeder("compiler_seed", ["compiler0"]),
            _Tuner(),
        ],
        max_evaluations=24,
        seed=seed,
        beam_width=4,
        epsilon=0.1,
        cost_exponent=cost_exponent,
    )
    assert outcome.evaluations_this_session == 24
    return evaluator.spent["compiler0"]


def test_the_search_spends_its_time_on_cheap_parents(tmp_path: Path) -> None:
    """Cost-blind, tune expands the slow compiler seed while it is a beam member (two 60 s children
    in each of 2 of these 10 seeded runs); cost-aware, only the seed itself is paid for."""
    seeds = range(10)
    assert sum(_run_demo(tmp_path, 0.0, seed) for seed in seeds) >= 10 * 60.0 + 2 * 60.0
    assert [_run_demo(tmp_path, 1.0, seed) for seed in seeds] == [60.0] * 10


def _rivals_graph() -> tuple[SearchGraph, dict[str, str]]:
    """A cheap best kernel and a runner-up close behind it that costs a hundred times as much, each from
    another operator (their own MAP-Elites niches), and two cheap stragglers."""
    graph = SearchGraph()
    ids = {}
    for tag, objective, wall_s in [
        ("best", 3.0, 0.6),
        ("dear", 2.9, 62.7),
        ("cheap", 1.5, 0.7),
        ("slow", 1.0, 0.8),
    ]:
        candidate = Candidate(f"# {tag}\n", "triton", tag)
        graph.add_candidate(candidate)
        graph.record(
            candidate.id, EvalReport(candidate.id, Status.OK, wall_s=wall_s), FitnessValue(True, objective)
        )
        ids[tag] = candidate.id
    return graph, ids


@pytest.mark.parametrize("niche", ["tournament", "map_elites"])
def test_islands_rarely_pick_a_runner_up_that_costs_a_hundred_times_the_best(niche: str) -> None:
    graph, ids = _rivals_graph()

    def picks(cost_exponent: float) -> Counter[str]:
        policy = build_selection(
            "islands", num_islands=1, tournament_size=2, niche=niche, cost_exponent=cost_exponent
        )
        return Counter(s[0] for s in policy.select(graph, random.Random(0), 4000, 1))

    blind, aware = picks(0.0), picks(1.0)
    assert blind[ids["dear"]] > 0.2 * 4000
    assert aware[ids["dear"]] < 0.03 * 4000
    assert aware[ids["best"]] > blind[ids["best"]]  # the cheap best kernel gets the turns back
    with pytest.raises(ValueError, match="cost_exponent"):
        build_selection("islands", cost_exponent=-1.0)


def test_mcts_expands_the_dear_runner_up_less_often() -> None:
    graph, ids = _rivals_graph()

    def picks(cost_exponent: float) -> Counter[str]:
        policy = build_selection("mcts", cost_exponent=cost_exponent)
        return Counter(s[0] for s in policy.select(graph, random.Random(0), 40, 1))

    blind, aware = picks(0.0), picks(1.0)
    assert blind[ids["dear"]] >= 5
    assert aware[ids["dear"]] < blind[ids["dear"]] / 2
    assert aware[ids["best"]] > blind[ids["best"]]
    with pytest.raises(ValueError, match="cost_exponent"):
        build_selection("mcts", cost_exponent=-1.0)
