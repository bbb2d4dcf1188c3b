"""Selection policies: which graph nodes are expanded next.

`build_selection("greedy", beam_width=4)` makes a policy by name; `SELECTION_POLICIES.names()` lists
them. Options are checked against the policy's constructor so a typo in config fails at once.
"""

from __future__ import annotations

import inspect

from kernelevolve.registry import Registry
from kernelevolve.search.interfaces import SelectionPolicy
from kernelevolve.search.selection.greedy import GreedyPolicy
from kernelevolve.search.selection.islands import IslandsPolicy, niche_descriptor
from kernelevolve.search.selection.mcts import MCTSPolicy

SELECTION_POLICIES: Registry[SelectionPolicy] = Registry("selection policy")
SELECTION_POLICIES.register("greedy")(GreedyPolicy)
SELECTION_POLICIES.register("islands")(IslandsPolicy)
SELECTION_POLICIES.register("mcts")(MCTSPolicy)


def build_selection(name: str, **options: object) -> SelectionPolicy:
    """A policy by registry name; unknown names or options raise naming the valid ones."""
    factory = SELECTION_POLICIES.get(name)
    params = inspect.signature(factory).parameters
    valid = [p for p in params if p != "self"]
    unknown = sorted(k for k in options if k not in params)
    if unknown:
        raise ValueError(
            f"unknown option(s) {unknown} for selection policy {name!r}; valid: {', '.join(valid)}"
        )
    return factory(**options)


__all__ = [
    "SELECTION_POLICIES",
    "GreedyPolicy",
    "IslandsPolicy",
    "MCTSPolicy",
    "build_selection",
    "niche_descriptor",
]
