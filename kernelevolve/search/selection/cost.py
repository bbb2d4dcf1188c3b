"""What expanding a node will cost: its own evaluation's seconds, the best guess for its children's.

A child of a node is the same kernel with other block sizes, another fusion plan or an LLM's edit, so it
compiles and runs about as long as its parent did. Costs differ by orders of magnitude between the
nodes of one search: on `platform=cpu` the softmax demo's templates take under a second to evaluate in
the Triton interpreter, while Inductor's kernels for the same spec (the compiler seed) take 60 s,
because the interpreter runs Inductor's `max2` reduction one element at a time in Python; its tuned
children took 35-120 s each, so four of them cost the demo three of its four minutes for kernels
hundreds of times slower than the templates. On GPUs a kernel that keeps ptxas busy for 100 s has
the same effect on a sweep problem's 40 s budget.

Selection divides a parent's weight by how much more than the best node its evaluation cost
(`cost_discount`): the best node is never discounted, so an expensive best kernel is still refined,
while an expensive runner-up is expanded as often as its improvement per second warrants.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernelevolve.search.graph import Node

# An evaluation costs at least about this much beyond the seconds its report records (the worker
# round trip, the proposal, scoring and checkpointing), so differences below it are noise, not cost.
MIN_EVALUATION_COST_S = 1.0


def evaluation_cost(node: Node) -> float | None:
    """Seconds `node`'s evaluation took (timeouts included), at least MIN_EVALUATION_COST_S; None when
    unknown (pending, or a report that recorded no time)."""
    if node.report is None or node.report.wall_s <= 0:
        return None
    return max(node.report.wall_s, MIN_EVALUATION_COST_S)


def cost_discount(node: Node, reference_s: float | None, exponent: float = 1.0) -> float:
    """A selection weight factor in (0, 1]: (reference_s / cost) ** exponent for a node whose evaluation
    cost more than `reference_s`, 1 for a cheaper one or when either cost is unknown."""
    cost = evaluation_cost(node)
    if cost is None or reference_s is None or exponent <= 0 or cost <= reference_s:
        return 1.0
    return float((reference_s / cost) ** exponent)


def cost_discounts(ranked_nodes: Sequence[Node], exponent: float = 1.0) -> dict[str, float]:
    """Each node's `cost_discount` against the first one, the best (`selection.greedy.ranked` order)."""
    reference = evaluation_cost(ranked_nodes[0]) if ranked_nodes else None
    return {n.id: cost_discount(n, reference, exponent) for n in ranked_nodes}
