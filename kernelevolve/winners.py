"""Which nodes a finished search reports, once their confirmations are in.

The search ranks candidates on settled timings of a few calls, so the order of two whose times are close
is within what one such measurement can tell; the winner's confirmation (`app.confirm_winners`: every
timed call, no settling) may read it slower than a runner-up timed. On the H200's sample run 11, L1/90's
winner timed 2.19 ms in search and 2.52 ms confirmed, with a runner-up at 2.205 ms in search. So a runner-up
within `RUNNER_UP_WITHIN` of the winner is confirmed beside it, and the one whose confirmation is faster is
reported: either figure is a full measurement of the kernel reported with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kernelevolve.graph import Node, SearchGraph
from kernelevolve.outputs import confirmed_fitness
from kernelevolve.types import Baseline, EvalReport

# A runner-up whose search speedup is within this factor of the winner's is confirmed beside it.
RUNNER_UP_WITHIN = 1.05


def contenders(graph: SearchGraph, winner: Node | None, accepts: Callable[[Node], bool]) -> list[Node]:
    """The winner, and the next-best node `accepts` takes where its search speedup is within
    RUNNER_UP_WITHIN of the winner's; nothing where there is no winner."""
    if winner is None or winner.fitness is None:
        return []
    runner_up = next((n for n in graph.top(len(graph)) if n.id != winner.id and accepts(n)), None)
    if runner_up is None or runner_up.fitness is None:
        return [winner]
    if runner_up.fitness.objective * RUNNER_UP_WITHIN < winner.fitness.objective:
        return [winner]
    return [winner, runner_up]


def reported_winner(
    nodes: list[Node], confirmations: Mapping[str, EvalReport], baselines: Mapping[str, Baseline]
) -> Node | None:
    """Of `nodes` (the winner first), the one whose passing confirmation scores best; the winner where
    none passed (it is then reported with its failed or missing confirmation, as before)."""
    confirmed = [
        (fitness, -index, node)
        for index, node in enumerate(nodes)
        if (fitness := confirmed_fitness(node, dict(baselines), confirmations.get(node.id))) is not None
    ]
    if not confirmed:
        return nodes[0] if nodes else None
    return max(confirmed, key=lambda entry: entry[:2])[2]
