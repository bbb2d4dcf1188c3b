"""Island model: separate sub-populations, tournament or MAP-Elites parents, periodic migration.

Membership: seeds (nodes without a parent in the graph) are dealt to islands round-robin; any other
node joins the island its parent set was selected for (or, if the policy did not select that set,
its first parent's home island). Every `migration_interval` observations the best feasible node of
each island is copied, as membership, to the next island (i -> i + 1, wrapping).

With ``niche="map_elites"`` each island keeps, per niche, only its best member (the elite) and picks
parents uniformly among elites. A niche is `niche_descriptor(candidate)`: backend, operator and a
coarse bucket of the tuned parameters in ``candidate.metadata["params"]``.

Both draws weigh a member by its evaluation cost (`selection.cost`) against its island's best member's:
one that took k times as long enters a tournament, or is picked among the elites, (1/k) ** `cost_exponent`
as often; 0 ignores cost.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Sequence
from typing import Any

from kernelevolve.search.graph import Node, SearchGraph
from kernelevolve.search.interfaces import ParentSet
from kernelevolve.search.selection.cost import cost_discounts
from kernelevolve.search.selection.greedy import (
    check_request,
    draw_sets,
    first_not_in,
    quality,
    ranked,
    weighted_pick,
)
from kernelevolve.types import Candidate

log = logging.getLogger(__name__)

Niche = tuple[str, str, tuple[tuple[str, str], ...]]


def _bucket(value: Any) -> str:
    # Powers of four: 1-3, 4-15, 16-63, 64-255... Block sizes 32 and 64 share a bucket only when
    # they behave alike often enough; coarse niches keep the archive small.
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        if value <= 0:
            return "<=0"
        return f"4^{math.floor(math.log2(value) / 2)}"
    return str(value)[:32]


def niche_descriptor(candidate: Candidate) -> Niche:
    """MAP-Elites niche of a candidate (see module doc)."""
    params = candidate.metadata.get("params") or {}
    if not isinstance(params, dict):
        params = {}
    buckets = tuple(sorted((str(k), _bucket(v)) for k, v in params.items()))
    return (candidate.backend, candidate.operator, buckets)


class IslandsPolicy:
    name = "islands"
    NICHES = ("tournament", "map_elites")

    def __init__(
        self,
        num_islands: int = 4,
        tournament_size: int = 3,
        migration_interval: int | None = 10,
        niche: str | None = None,
        cost_exponent: float = 1.0,
    ) -> None:
        if num_islands < 1:
            raise ValueError(f"islands num_islands must be >= 1, got {num_islands}")
        if tournament_size < 1:
            raise ValueError(f"islands tournament_size must be >= 1, got {tournament_size}")
        if migration_interval is not None and migration_interval < 0:
            raise ValueError(f"islands migration_interval must be >= 0 (0 = never), got {migration_interval}")
        if cost_exponent < 0:
            raise ValueError(f"islands cost_exponent must be >= 0 (0 ignores cost), got {cost_exponent}")
        niche = niche or "tournament"
        if niche not in self.NICHES:
            raise ValueError(f"unknown islands niche {niche!r}; valid: {', '.join(self.NICHES)}")
        self.num_islands = num_islands
        self.tournament_size = tournament_size
        self.migration_interval = migration_interval or 0
        self.niche = niche
        self.cost_exponent = cost_exponent
        # Ordered dicts as ordered sets: iteration order must not depend on string hashing.
        self.members: list[dict[str, None]] = [{} for _ in range(num_islands)]
        self.home: dict[str, int] = {}
        self.migrations: list[tuple[int, int, str]] = []  # (from island, to island, node id)
        self._synced = 0
        self._next_seed_island = 0
        self._next_island = 0
        self._observations = 0
        self._selected_for: dict[ParentSet, int] = {}

    # -- membership -----------------------------------------------------------------------------

    def _sync(self, graph: SearchGraph) -> None:
        nodes = graph.nodes()
        for node in nodes[self._synced :]:
            self._assign(graph, node)
        self._synced = len(nodes)

    def _assign(self, graph: SearchGraph, node: Node) -> None:
        if node.id in self.home:
            return
        parents = [p for p in node.candidate.parent_ids if p in self.home]
        island = self._selected_for.get(node.candidate.parent_ids)
        if island is None and parents:
            island = self.home[parents[0]]
        if island is None:
            island = self._next_seed_island
            self._next_seed_island = (island + 1) % self.num_islands
        self.home[node.id] = island
        self.members[island][node.id] = None

    def island_of(self, node_id: str) -> int:
        return self.home[node_id]

    def _evaluated_members(self, graph: SearchGraph, island: int) -> list[Node]:
        return [n for n in (graph.node(i) for i in self.members[island]) if n.evaluated]

    def elites(self, graph: SearchGraph, island: int) -> dict[Niche, Node]:
        """Best evaluated member per niche on one island (niches in first-seen order)."""
        self._sync(graph)
        archive: dict[Niche, Node] = {}
        for node in self._evaluated_members(graph, island):
            key = niche_descriptor(node.candidate)
            if key not in archive or quality(node) > quality(archive[key]):
                archive[key] = node
        return archive

    # -- selection ------------------------------------------------------------------------------

    def _discounts(self, nodes: list[Node]) -> list[float]:
        """Cost weights of `nodes`, in their order, against the best of them (which keeps its full weight)."""
        discount = cost_discounts(ranked(nodes), self.cost_exponent)
        return [discount[n.id] for n in nodes]

    def _tournament(self, rng: random.Random, pool: list[Node], exclude: Sequence[str]) -> str | None:
        entrants = [n for n in pool if n.id not in exclude]
        if not entrants:
            return None
        ids, weights = [n.id for n in entrants], self._discounts(entrants)
        drawn: list[str] = []
        while len(drawn) < self.tournament_size and (entrant := weighted_pick(rng, ids, weights, drawn)):
            drawn.append(entrant)
        by_id = {n.id: n for n in entrants}
        return max((by_id[i] for i in drawn), key=quality).id

    def _pick_in(
        self, graph: SearchGraph, island: int, rng: random.Random, exclude: Sequence[str]
    ) -> str | None:
        if self.niche == "map_elites":
            elites = [n for n in self.elites(graph, island).values() if n.id not in exclude]
            return weighted_pick(rng, [n.id for n in elites], self._discounts(elites), ())
        return self._tournament(rng, self._evaluated_members(graph, island), exclude)

    def select(self, graph: SearchGraph, rng: random.Random, count: int, arity: int) -> list[ParentSet]:
        check_request(count, arity)
        if arity == 0:
            return [() for _ in range(count)]
        self._sync(graph)
        everyone = [n.id for n in ranked(graph.evaluated())]
        if len(everyone) < arity:
            return []
        populated = [i for i in range(self.num_islands) if self._evaluated_members(graph, i)]
        out: list[ParentSet] = []
        for _ in range(count):
            # Islands take turns; empty ones (no evaluated member yet) are skipped.
            island = min(populated, key=lambda i: (i - self._next_island) % self.num_islands)
            self._next_island = (island + 1) % self.num_islands

            def pick(r: random.Random, exclude: Sequence[str], island: int = island) -> str | None:
                # A small island fills the set with the best nodes elsewhere.
                return self._pick_in(graph, island, r, exclude) or first_not_in(everyone, exclude)

            parent_set = draw_sets(rng, 1, arity, pick)[0]
            self._selected_for[parent_set] = island
            out.append(parent_set)
        return out

    # -- observation and migration --------------------------------------------------------------

    def observe(self, graph: SearchGraph, node_id: str) -> None:
        self._sync(graph)
        self._observations += 1
        if self.migration_interval and self._observations % self.migration_interval == 0:
            self.migrate(graph)

    def migrate(self, graph: SearchGraph) -> None:
        """Copy each island's best feasible member to the next island."""
        if self.num_islands < 2:
            return
        bests: list[Node | None] = []
        for island in range(self.num_islands):
            feasible = [n for n in self._evaluated_members(graph, island) if n.feasible]
            bests.append(max(feasible, key=quality) if feasible else None)
        for island, best in enumerate(bests):
            target = (island + 1) % self.num_islands
            if best is not None and best.id not in self.members[target]:
                self.members[target][best.id] = None
                self.migrations.append((island, target, best.id))
                log.debug("migrated %s from island %d to %d", best.id, island, target)
