"""Variation operators: everything that proposes candidate kernels.

Registered by name so config can list them (`search.operators: [template, fusion_seed, tune, ...]`);
each factory imports its module only when used.
"""

from __future__ import annotations

from typing import Any

from kernelevolve.interfaces import Operator
from kernelevolve.registry import Registry

OPERATORS: Registry[Operator] = Registry("operator")


@OPERATORS.register("template")
def _template(**options: Any) -> Operator:
    from kernelevolve.variation.template_operator import TemplateOperator

    return TemplateOperator(**options)


@OPERATORS.register("compiler_seed")
def _compiler_seed(**options: Any) -> Operator:
    from kernelevolve.variation.compiler_seed import CompilerSeedOperator

    return CompilerSeedOperator(**options)


@OPERATORS.register("rewrite_seed")
def _rewrite_seed(**options: Any) -> Operator:
    from kernelevolve.variation.rewrite_seed import RewriteSeedOperator

    return RewriteSeedOperator(**options)


@OPERATORS.register("recurrent_seed")
def _recurrent_seed(**options: Any) -> Operator:
    from kernelevolve.variation.recurrent_seed import RecurrentSeedOperator

    return RecurrentSeedOperator(**options)


@OPERATORS.register("elementwise_seed")
def _elementwise_seed(**options: Any) -> Operator:
    from kernelevolve.variation.elementwise_seed import ElementwiseSeedOperator

    return ElementwiseSeedOperator(**options)


@OPERATORS.register("fusion_boundary")
def _fusion_boundary(**options: Any) -> Operator:
    from kernelevolve.variation.fusion_boundary import FusionBoundaryOperator

    return FusionBoundaryOperator(**options)


@OPERATORS.register("fusion_seed")
def _fusion_seed(**options: Any) -> Operator:
    from kernelevolve.variation.fusion_seed import FusionSeedOperator

    return FusionSeedOperator(**options)


@OPERATORS.register("tune")
def _tune(**options: Any) -> Operator:
    from kernelevolve.variation.tuning import TuningOperator

    return TuningOperator(**options)


@OPERATORS.register("graph_replay")
def _graph_replay(**options: Any) -> Operator:
    from kernelevolve.variation.graph_replay import GraphReplayOperator

    return GraphReplayOperator(**options)


@OPERATORS.register("replay")
def _replay(kb_config: dict[str, Any] | None = None, k: int = 4) -> Operator:
    from kernelevolve.variation.replay import ReplayOperator

    return ReplayOperator(past_wins_dir(kb_config), k=k)


def past_wins_dir(kb_config: dict[str, Any] | None) -> str | None:
    """The past-win folder from the kb config (`kb.cache_dir`), or None for the default cache."""
    cache = (kb_config or {}).get("cache_dir")
    return f"{cache}/past_wins" if cache else None


@OPERATORS.register("llm")
def _llm(**options: Any) -> Operator:
    from kernelevolve.variation.llm_operator import LLMOperator

    return LLMOperator(**options)
