"""Monte Carlo tree search (UCT) over the search graph read as a tree.

The tree: a virtual root whose children are the seeds (nodes without a parent in the graph); every
other node hangs under its first parent. A node's value is the best feasible objective in its
subtree divided by the best objective overall (0 where nothing below is feasible); its visit count
is the number of evaluated nodes in its subtree, counted in `observe` (once per node).

`select` descends from the root by UCT, value + c * sqrt(ln N(parent) / N(child)), and returns the
node to expand. Progressive widening stops the descent at a node that has fewer children than
ceil(widening_constant * N^widening_exponent): it is expanded itself. Each returned node adds a
virtual visit along its path, removed when one of its children is observed, so concurrent selects
spread out over the tree (a node whose expansion never yields a child keeps that penalty). For arity
above one the other parents are the best other evaluated nodes.

A child's UCT score is weighed by its evaluation cost (`selection.cost`) against the best node's: one
that took k times as long scores (1/k) ** `cost_exponent` of its UCT value (its children will cost about
as much); 0 ignores cost. An unvisited child still comes first.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict

from kernelevolve.search.graph import SearchGraph
from kernelevolve.search.interfaces import ParentSet
from kernelevolve.search.selection.cost import cost_discounts
from kernelevolve.search.selection.greedy import check_request, ranked

ROOT = "<root>"  # not a candidate id: those are 16 hex digits


class MCTSPolicy:
    name = "mcts"

    def __init__(
        self,
        exploration: float = 1.4,
        widening_constant: float = 1.0,
        widening_exponent: float = 0.5,
        cost_exponent: float = 1.0,
    ) -> None:
        if exploration < 0:
            raise ValueError(f"mcts exploration must be >= 0, got {exploration}")
        if widening_constant <= 0 or not 0 <= widening_exponent <= 1:
            raise ValueError(
                "mcts needs widening_constant > 0 and 0 <= widening_exponent <= 1, "
                f"got {widening_constant}, {widening_exponent}"
            )
        if cost_exponent < 0:
            raise ValueError(f"mcts cost_exponent must be >= 0 (0 ignores cost), got {cost_exponent}")
        self.exploration = exploration
        self.cost_exponent = cost_exponent
        self.widening_constant = widening_constant
        self.widening_exponent = widening_exponent
        self.visits: dict[str, int] = defaultdict(int)
        self.virtual: dict[str, int] = defaultdict(int)
        self._observed: dict[str, None] = {}

    # -- tree -----------------------------------------------------------------------------------

    @staticmethod
    def tree_parent(graph: SearchGraph, node_id: str) -> str:
        parents = graph.parents(node_id)
        return parents[0] if parents else ROOT

    def _path_up(self, graph: SearchGraph, node_id: str) -> list[str]:
        """node_id, its tree parent, ..., ROOT."""
        path = [node_id]
        while path[-1] != ROOT:
            path.append(self.tree_parent(graph, path[-1]))
        return path

    def _tree(self, graph: SearchGraph) -> tuple[dict[str, list[str]], dict[str, float]]:
        """Children lists (insertion order, pending included) and normalised subtree values."""
        children: dict[str, list[str]] = defaultdict(list)
        nodes = graph.nodes()
        parent_of = {n.id: self.tree_parent(graph, n.id) for n in nodes}
        for n in nodes:
            children[parent_of[n.id]].append(n.id)
        best: dict[str, float] = {
            n.id: n.fitness.objective if n.feasible and n.fitness else 0.0 for n in nodes
        }
        # Children come after their parents in insertion order, so one reverse pass folds subtrees up.
        for n in reversed(nodes):
            parent = parent_of[n.id]
            if parent != ROOT:
                best[parent] = max(best[parent], best[n.id])
        top = max(best.values(), default=0.0)
        values = {k: (v / top if top > 0 else 0.0) for k, v in best.items()}
        return children, values

    def _n(self, node_id: str) -> int:
        return self.visits[node_id] + self.virtual[node_id]

    def _allowed_children(self, node_id: str) -> int:
        n = max(self._n(node_id), 1)
        return max(1, math.ceil(self.widening_constant * n**self.widening_exponent))

    def _uct(self, parent: str, child: str, values: dict[str, float]) -> float:
        n_child = self._n(child)
        if n_child == 0:
            return math.inf
        return values[child] + self.exploration * math.sqrt(math.log(max(self._n(parent), 1)) / n_child)

    # -- policy ---------------------------------------------------------------------------------

    def _catch_up(self, graph: SearchGraph) -> None:
        # Nodes evaluated without an observe call (e.g. a resumed run) still count as visits.
        for node in graph.evaluated():
            if node.id not in self._observed:
                self.observe(graph, node.id)

    def _descend(
        self,
        graph: SearchGraph,
        children: dict[str, list[str]],
        values: dict[str, float],
        planned: dict[str, int],
        discounts: dict[str, float],
    ) -> list[str]:
        """Path from ROOT to the node to expand (empty when no seed is evaluated)."""
        path = [ROOT]
        while True:
            here = path[-1]
            kids = children.get(here, [])
            # Children already in flight from this select call count towards widening.
            if here != ROOT and len(kids) + planned.get(here, 0) < self._allowed_children(here):
                return path
            ready = [k for k in kids if graph.node(k).evaluated]
            if not ready:
                return path if here != ROOT else []
            path.append(max(ready, key=lambda k: self._uct(here, k, values) * discounts[k]))

    def select(self, graph: SearchGraph, rng: random.Random, count: int, arity: int) -> list[ParentSet]:
        check_request(count, arity)
        if arity == 0:
            return [() for _ in range(count)]
        self._catch_up(graph)
        evaluated = ranked(graph.evaluated())
        order = [n.id for n in evaluated]
        if len(order) < arity:
            return []
        children, values = self._tree(graph)
        discounts = cost_discounts(evaluated, self.cost_exponent)
        planned: dict[str, int] = {}
        out: list[ParentSet] = []
        for _ in range(count):
            path = self._descend(graph, children, values, planned, discounts)
            if not path:
                break
            chosen = path[-1]
            for step in path:
                self.virtual[step] += 1
            planned[chosen] = planned.get(chosen, 0) + 1
            partners = [i for i in order if i != chosen][: arity - 1]
            out.append((chosen, *partners))
        return out

    def observe(self, graph: SearchGraph, node_id: str) -> None:
        if node_id in self._observed:
            return
        self._observed[node_id] = None
        path = self._path_up(graph, node_id)
        for step in path:
            self.visits[step] += 1
        # The select that expanded this node's parent left a virtual visit on the parent's path.
        for step in path[1:]:
            if self.virtual[step] > 0:
                self.virtual[step] -= 1
