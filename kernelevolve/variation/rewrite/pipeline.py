"""Apply the rewrite rules to a reference until none applies, and write the result back as source.

Rules apply one match at a time; after each, dead nodes go and shapes are propagated again, so a rule
sees the graph the previous one left (a sum over a size-1 dimension removed exposes `a - a`, a folded
GEMM leaves a keepdim result whose later reductions are over size 1).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelevolve.variation.rewrite.trace import RewriteError

log = logging.getLogger(__name__)

RULES = ("linear_fold", "conv_fold", "singleton_reduction", "self_difference")
MAX_REWRITES = 64  # a rule that kept matching its own output would be a bug: stop, do not loop


@dataclass(frozen=True)
class Fired:
    rule: str
    description: str


@dataclass(frozen=True)
class Rewritten:
    """The rewritten reference ("" when no rule applies or the rewrite failed) and why."""

    source: str
    fired: tuple[Fired, ...] = ()
    reason: str = ""  # why there is no source

    @property
    def rules(self) -> tuple[str, ...]:
        """Names of the rules that fired, each once, in the order they first did."""
        return tuple(dict.fromkeys(f.rule for f in self.fired))


def _rule_functions() -> dict[str, Callable[[Any], str | None]]:
    from kernelevolve.variation.rewrite import conv_fold, identities, linear_fold

    return {
        "linear_fold": linear_fold.apply,
        "conv_fold": conv_fold.apply,
        "singleton_reduction": identities.apply_singleton,
        "self_difference": identities.apply_self_difference,
    }


def _apply_one(
    graph_module: Any, rules: Sequence[str], functions: dict[str, Callable[[Any], str | None]]
) -> Fired | None:
    """The first rule (in `rules` order) that rewrites something, having rewritten it."""
    for rule in rules:
        description = functions[rule](graph_module)
        if description is not None:
            return Fired(rule, description)
    return None


def rewrite_reference(
    source: str,
    shape_params: Mapping[str, Any] | None = None,
    rules: Sequence[str] = RULES,
    mode: str = "as_built",
) -> Rewritten:
    """The reference at `shape_params` with every applicable rule applied; never raises for a
    reference that cannot be traced or rewritten (the reason is in the answer)."""
    functions = _rule_functions()
    unknown = [r for r in rules if r not in functions]
    if unknown:
        raise ValueError(f"unknown rewrite rule(s) {unknown}; valid: {', '.join(RULES)}")
    from kernelevolve.variation.rewrite.source import forward_code, replace_forward
    from kernelevolve.variation.rewrite.trace import propagate_shapes, trace_reference

    try:
        traced = trace_reference(source, shape_params, mode)
        graph = traced.graph_module.graph
        fired: list[Fired] = []
        while len(fired) < MAX_REWRITES:
            step = _apply_one(traced.graph_module, rules, functions)
            if step is None:
                break
            fired.append(step)
            graph.eliminate_dead_code()
            graph.lint()
            propagate_shapes(traced)
        if not fired:
            return Rewritten("", reason="no rewrite rule applies")
        return Rewritten(
            replace_forward(source, forward_code(traced.graph_module, traced.namespace)), tuple(fired)
        )
    except RewriteError as exc:
        return Rewritten("", reason=str(exc))
