from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from kernelevolve.registry import UnknownNameError
from kernelevolve.search.graph import SearchGraph
from kernelevolve.search.interfaces import SelectionPolicy
from kernelevolve.search.selection import (
    SELECTION_POLICIES,
    GreedyPolicy,
    IslandsPolicy,
    MCTSPolicy,
    build_selection,
    niche_descriptor,
)
from kernelevolve.search.selection.mcts import ROOT
from kernelevolve.types import Candidate, EvalReport, FitnessValue, Status


def cand(tag: str, parents: tuple[str, ...] = (), operator: str = "seed", **params: Any) -> Candidate:
    meta = {"params": params} if params else {}
    return Candidate(f"# {tag}\n", "triton", operator, parent_ids=parents, metadata=meta)


def add(
    g: SearchGraph,
    tag: str,
    objective: float | None,
    parents: tuple[str, ...] = (),
    status: Status = Status.OK,
    operator: str = "seed",
    **params: Any,
) -> str:
    """Add a node; objective None leaves it pending, status other than OK makes it infeasible."""
    c = cand(tag, parents, operator, **params)
    g.add_candidate(c)
    if objective is not None:
        fit = FitnessValue(True, objective) if status is Status.OK else FitnessValue(False, 0.0)
        g.record(c.id, EvalReport(c.id, status), fit)
    return c.id


def synthetic() -> tuple[SearchGraph, dict[str, str]]:
    g = SearchGraph()
    ids: dict[str, str] = {}
    for i, obj in enumerate([1.0, 1.5, 0.7, 2.0, 3.0, 1.2]):
        ids[f"n{i}"] = add(g, f"n{i}", obj)
    ids["bad"] = add(g, "bad", 0.0, status=Status.COMPILE_ERROR)
    ids["wait"] = add(g, "wait", None, parents=(ids["n4"],))
    return g, ids


POLICIES: dict[str, Callable[[], SelectionPolicy]] = {
    "greedy": lambda: GreedyPolicy(beam_width=3),
    "islands": lambda: IslandsPolicy(num_islands=3, tournament_size=2, migration_interval=4),
    "map_elites": lambda: IslandsPolicy(num_islands=2, niche="map_elites"),
    "mcts": lambda: MCTSPolicy(),
}


@pytest.mark.parametrize("kind", sorted(POLICIES))
def test_contract(kind: str) -> None:
    g, ids = synthetic()
    policy = POLICIES[kind]()
    assert isinstance(policy, SelectionPolicy)
    assert policy.select(g, random.Random(0), 3, 0) == [(), (), ()]
    assert policy.select(g, random.Random(0), 0, 1) == []
    evaluated = {n.id for n in g.evaluated()}
    for arity in (1, 2, 3):
        sets = policy.select(g, random.Random(1), 5, arity)
        assert 1 <= len(sets) <= 5
        for s in sets:
            assert len(s) == arity and len(set(s)) == arity
            assert set(s) <= evaluated and ids["wait"] not in s
    with pytest.raises(ValueError):
        policy.select(g, random.Random(0), 1, -1)


@pytest.mark.parametrize("kind", sorted(POLICIES))
def test_too_few_evaluated_nodes(kind: str) -> None:
    g = SearchGraph()
    only = add(g, "only", 1.0)
    add(g, "pending", None, parents=(only,))
    policy = POLICIES[kind]()
    assert policy.select(g, random.Random(0), 4, 2) == []
    sets = policy.select(g, random.Random(0), 2, 1)
    assert sets and all(s == (only,) for s in sets)
    assert POLICIES[kind]().select(SearchGraph(), random.Random(0), 2, 1) == []


def drive(policy: SelectionPolicy, seed: int, steps: int = 40) -> tuple[SearchGraph, list[tuple[str, ...]]]:
    """A small search: children score their first parent's objective times a random factor."""
    rng = random.Random(seed)
    g = SearchGraph()
    for i in range(3):
        nid = add(g, f"seed{i}", 1.0 + 0.1 * i)
        policy.observe(g, nid)
    history: list[tuple[str, ...]] = []
    for step in range(steps):
        sets = policy.select(g, rng, 2, 1 + step % 2)
        history.extend(sets)
        for j, parents in enumerate(sets):
            assert all(g.node(p).evaluated for p in parents)
            base = g.node(parents[0]).fitness
            assert base is not None
            failed = rng.random() < 0.2
            objective = 0.0 if failed else max(base.objective, 0.5) * rng.uniform(0.8, 1.3)
            status = Status.RUNTIME_ERROR if failed else Status.OK
            nid = add(g, f"s{step}.{j}", objective, parents, status, operator="op", BLOCK=2 ** (3 + step % 5))
            policy.observe(g, nid)
    return g, history


@pytest.mark.parametrize("kind", sorted(POLICIES))
def test_deterministic_and_improving(kind: str) -> None:
    g1, h1 = drive(POLICIES[kind](), seed=7)
    g2, h2 = drive(POLICIES[kind](), seed=7)
    assert h1 == h2 and [n.id for n in g1.nodes()] == [n.id for n in g2.nodes()]
    best = g1.best()
    assert best is not None and best.fitness is not None and best.fitness.objective > 1.2
    _, h3 = drive(POLICIES[kind](), seed=8)
    assert h3 != h1


def test_greedy_picks_from_the_top() -> None:
    g, ids = synthetic()
    policy = GreedyPolicy(beam_width=2, epsilon=0.0)
    picked = Counter(s[0] for s in policy.select(g, random.Random(3), 50, 1))
    assert set(picked) == {ids["n4"], ids["n3"]}
    assert picked[ids["n4"]] > picked[ids["n3"]]  # rank weighting favours the best
    pairs = policy.select(g, random.Random(3), 4, 2)
    assert all(set(p) == {ids["n4"], ids["n3"]} for p in pairs)
    # Arity above the beam width fills with the next best nodes.
    triples = policy.select(g, random.Random(3), 2, 3)
    assert all(set(t) == {ids["n4"], ids["n3"], ids["n1"]} for t in triples)


def test_greedy_epsilon_explores() -> None:
    g, ids = synthetic()
    picked = {s[0] for s in GreedyPolicy(beam_width=1, epsilon=0.5).select(g, random.Random(0), 60, 1)}
    assert ids["n4"] in picked and len(picked) > 3 and ids["wait"] not in picked


def test_greedy_without_feasible_nodes_returns_failures_for_repair() -> None:
    g = SearchGraph()
    static = add(g, "static", 0.0, status=Status.REJECTED_STATIC)
    wrong = add(g, "wrong", 0.0, status=Status.INCORRECT)
    add(g, "pending", None)
    policy = GreedyPolicy(beam_width=1, epsilon=0.0)
    assert policy.select(g, random.Random(0), 3, 1) == [(wrong,)] * 3  # got furthest
    assert set(policy.select(g, random.Random(0), 1, 2)[0]) == {wrong, static}


def test_islands_membership_and_migration() -> None:
    g = SearchGraph()
    policy = IslandsPolicy(num_islands=2, tournament_size=2, migration_interval=3)
    a = add(g, "a", 1.0)
    b = add(g, "b", 5.0)
    for nid in (a, b):
        policy.observe(g, nid)
    assert (policy.island_of(a), policy.island_of(b)) == (0, 1)  # round-robin seeds
    assert policy.migrations == []
    # Each island selects from itself only.
    sets = policy.select(g, random.Random(0), 4, 1)
    assert sets == [(a,), (b,), (a,), (b,)]
    child = add(g, "a1", 1.5, parents=(a,))
    assert policy.select(g, random.Random(0), 1, 1)[0][0] in (a, child)
    assert policy.island_of(child) == 0
    policy.observe(g, child)  # third observation: migration
    assert policy.migrations == [(0, 1, child), (1, 0, b)]
    assert b in policy.members[0] and child in policy.members[1]
    # b now competes on island 0 and, being best, wins every full tournament there.
    picks = [s[0] for s in policy.select(g, random.Random(5), 8, 1)]
    assert picks.count(b) > 4 and set(picks) <= {a, b, child}


def test_islands_child_joins_the_island_it_was_selected_for() -> None:
    g = SearchGraph()
    policy = IslandsPolicy(num_islands=3, tournament_size=2, migration_interval=3)
    a, b, c = add(g, "a", 2.0), add(g, "b", 1.0), add(g, "c", 3.0)
    for nid in (a, b, c):
        policy.observe(g, nid)  # the third observation migrates a -> 1, b -> 2, c -> 0
    assert policy.members == [{a: None, c: None}, {b: None, a: None}, {c: None, b: None}]
    # Full tournaments: island 0 picks c, island 1 picks the migrant a, island 2 picks c.
    assert policy.select(g, random.Random(0), 3, 1) == [(c,), (a,), (c,)]
    child = add(g, "a1", 2.5, parents=(a,))
    policy.observe(g, child)
    assert policy.island_of(a) == 0 and policy.island_of(child) == 1


def test_niche_descriptor_buckets() -> None:
    small = niche_descriptor(cand("x", BLOCK=32, num_warps=4))
    assert small == ("triton", "seed", (("BLOCK", "4^2"), ("num_warps", "4^1")))
    assert niche_descriptor(cand("y", BLOCK=48, num_warps=4)) == small
    assert niche_descriptor(cand("z", BLOCK=64, num_warps=4)) != small
    assert niche_descriptor(cand("w", operator="llm")) == ("triton", "llm", ())
    assert niche_descriptor(cand("v", order="col", flag=True, BLOCK=0))[2] == (
        ("BLOCK", "<=0"),
        ("flag", "True"),
        ("order", "col"),
    )


def test_map_elites_keeps_niche_elites() -> None:
    g = SearchGraph()
    policy = IslandsPolicy(num_islands=1, niche="map_elites", migration_interval=0)
    weak = add(g, "weak", 1.0, operator="tune", BLOCK=32)
    strong = add(g, "strong", 2.0, operator="tune", BLOCK=48)  # same niche as weak
    other = add(g, "other", 0.5, operator="tune", BLOCK=128)
    llm = add(g, "llm", 0.9, operator="llm")
    for nid in (weak, strong, other, llm):
        policy.observe(g, nid)
    elites = policy.elites(g, 0)
    assert sorted(n.id for n in elites.values()) == sorted([strong, other, llm])
    picked = Counter(s[0] for s in policy.select(g, random.Random(0), 60, 1))
    assert weak not in picked and set(picked) == {strong, other, llm}
    # A failed node fills an empty niche but never displaces a feasible elite.
    broken = add(g, "broken", 0.0, status=Status.RUNTIME_ERROR, operator="tune", BLOCK=32)
    fresh = add(g, "fresh", 0.0, status=Status.RUNTIME_ERROR, operator="repair")
    elites = policy.elites(g, 0)
    assert broken not in [n.id for n in elites.values()] and fresh in [n.id for n in elites.values()]


def test_mcts_visits_grow_and_widening_expands_fresh_nodes() -> None:
    g = SearchGraph()
    policy = MCTSPolicy()
    a = add(g, "a", 1.0)
    policy.observe(g, a)
    assert policy.visits[a] == 1 and policy.visits[ROOT] == 1
    assert policy.select(g, random.Random(0), 1, 1) == [(a,)]  # no children yet: expand a
    a1 = add(g, "a1", 2.0, parents=(a,))
    policy.observe(g, a1)
    a11 = add(g, "a11", 2.5, parents=(a1,))
    policy.observe(g, a11)
    policy.observe(g, a11)  # once per node
    assert (policy.visits[ROOT], policy.visits[a], policy.visits[a1], policy.visits[a11]) == (3, 3, 2, 1)


def test_mcts_prefers_the_better_subtree() -> None:
    g = SearchGraph()
    policy = MCTSPolicy(exploration=0.5)
    good, poor = add(g, "good", 1.0), add(g, "poor", 1.0)
    g1 = add(g, "good1", 3.0, parents=(good,))
    g2 = add(g, "good2", 2.0, parents=(good,))
    p1 = add(g, "poor1", 1.1, parents=(poor,))
    p2 = add(g, "poor2", 0.9, parents=(poor,))
    for nid in (good, poor, g1, g2, p1, p2):
        policy.observe(g, nid)
    sets = policy.select(g, random.Random(0), 12, 1)
    in_good = sum(s[0] in (good, g1, g2) for s in sets)
    assert in_good > len(sets) - in_good
    assert g1 in {s[0] for s in sets}  # the best leaf itself gets expanded
    # Virtual visits spread one call's picks instead of repeating a single node.
    assert len({s[0] for s in sets}) >= 3


def test_mcts_catches_up_on_unobserved_nodes_and_picks_partners() -> None:
    g, ids = synthetic()
    policy = MCTSPolicy()
    sets = policy.select(g, random.Random(0), 3, 2)
    assert policy.visits[ROOT] == len(g.evaluated())
    for first, partner in sets:
        assert partner == (ids["n4"] if first != ids["n4"] else ids["n3"])


def test_registry_and_build_selection() -> None:
    assert SELECTION_POLICIES.names() == ["greedy", "islands", "mcts"]
    policy = build_selection("greedy", beam_width=2, epsilon=0.0)
    assert isinstance(policy, GreedyPolicy) and policy.beam_width == 2
    assert isinstance(build_selection("islands", niche="map_elites"), IslandsPolicy)
    assert isinstance(build_selection("mcts", exploration=2.0), MCTSPolicy)
    with pytest.raises(UnknownNameError, match="valid names: greedy, islands, mcts"):
        build_selection("beam")
    with pytest.raises(ValueError, match="valid: beam_width, weighting, epsilon"):
        build_selection("greedy", beam=3)
    with pytest.raises(ValueError, match="valid: tournament, map_elites"):
        build_selection("islands", niche="novelty")
    with pytest.raises(ValueError, match="beam_width"):
        GreedyPolicy(beam_width=0)
