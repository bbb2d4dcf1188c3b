"""Variation operators: everything that proposes candidate kernels.

Registered by name so config can list them (`search.operators: [template, fusion_seed, tune, ...]`);
each factory imports its module only when used. A factory is called with `context` (an
`OperatorContext`: what the run gives every operator) and its options from
`search.operator_options.<name>`, and takes from the context what it needs, so a new operator is its module
and its registration: `OPERATORS.register(name)` from any code imported before the run, or an entry point
in the group `kernelevolve.operators` of an installed package (`load_entry_points`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevolve.registry import Registry
from kernelevolve.search.interfaces import Operator

ENTRY_POINT_GROUP = "kernelevolve.operators"
OPERATORS: Registry[Operator] = Registry("operator", group=ENTRY_POINT_GROUP)


@dataclass(frozen=True)
class OperatorContext:
    """What a run gives every operator's factory."""

    strict: bool = True  # own kernels only: seeds keeping library calls would be rejected
    kb_config: Mapping[str, Any] = field(default_factory=dict)  # the knowledge base's config (`kb`)
    run_dir: Path | None = None  # where the run writes (the LLM operator keeps its accounting there)
    llm_config: Mapping[str, Any] = field(default_factory=dict)  # the endpoint's config (`llm`)


def load_entry_points() -> list[str]:
    """Register the operators installed packages declare in `kernelevolve.operators` (name = factory);
    returns the names added. One already registered keeps its factory."""
    return OPERATORS.load_entry_points()


@OPERATORS.register("template")
def _template(context: OperatorContext, **options: Any) -> Operator:
    from kernelevolve.variation.template_operator import TemplateOperator

    return TemplateOperator(**options)


@OPERATORS.register("compiler_seed")
def _compiler_seed(context: OperatorContext, **options: Any) -> Operator:
    from kernelevolve.variation.compiler_seed import CompilerSeedOperator

    return CompilerSeedOperator(**{**options, "strict": context.strict})


@OPERATORS.register("rewrite_seed")
def _rewrite_seed(context: OperatorContext, **options: Any) -> Operator:
    from kernelevolve.variation.rewrite_seed import RewriteSeedOperator

    return RewriteSeedOperator(**{**options, "strict": context.strict})


@OPERATORS.register("recurrent_seed")
def _recurrent_seed(context: OperatorContext, **options: Any) -> Operator:
    from kernelevolve.variation.recurrent_seed import RecurrentSeedOperator

    return RecurrentSeedOperator(**{**options, "strict": context.strict})


@OPERATORS.register("elementwise_seed")
def _elementwise_seed(context: OperatorContext, **options: Any) -> Operator:
    from kernelevolve.variation.elementwise_seed import ElementwiseSeedOperator

    return ElementwiseSeedOperator(**{**options, "strict": context.strict})


@OPERATORS.register("fusion_boundary")
def _fusion_boundary(context: OperatorContext, **options: Any) -> Operator:
    from kernelevolve.variation.fusion_boundary import FusionBoundaryOperator

    return FusionBoundaryOperator(**options)


@OPERATORS.register("fusion_seed")
def _fusion_seed(context: OperatorContext, **options: Any) -> Operator:
    from kernelevolve.variation.fusion_seed import FusionSeedOperator

    return FusionSeedOperator(**options)


@OPERATORS.register("tune")
def _tune(context: OperatorContext, **options: Any) -> Operator:
    from kernelevolve.variation.tuning import TuningOperator

    return TuningOperator(**options)


@OPERATORS.register("graph_replay")
def _graph_replay(context: OperatorContext, **options: Any) -> Operator:
    from kernelevolve.variation.graph_replay import GraphReplayOperator

    # CUDA graphs are for permissive runs only
    return GraphReplayOperator(**{**options, "strict": context.strict})


@OPERATORS.register("replay")
def _replay(context: OperatorContext, k: int = 4) -> Operator:
    from kernelevolve.variation.replay import ReplayOperator

    return ReplayOperator(past_wins_dir(context.kb_config), k=k)


def past_wins_dir(kb_config: Mapping[str, Any] | None) -> str | None:
    """The past-win folder from the kb config (`kb.cache_dir`), or None for the default cache."""
    cache = (kb_config or {}).get("cache_dir")
    return f"{cache}/past_wins" if cache else None


@OPERATORS.register("llm")
def _llm(context: OperatorContext, **options: Any) -> Operator:
    from kernelevolve.variation.llm_operator import LLMOperator

    return LLMOperator(
        **{
            **options,
            "config": dict(context.llm_config),
            "kb_config": dict(context.kb_config),
            "run_dir": context.run_dir,
            "strict": context.strict,
        }
    )
