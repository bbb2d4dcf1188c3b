"""Parameter tuning of any candidate by editing the literals of its tunables (no LLM)."""

from __future__ import annotations

import dataclasses
import logging
import random
import re
from typing import Any

from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.types import Candidate, EvalReport, Status
from kernelevolve.variation.tunables import Tunable, apply_values, find_tunables

log = logging.getLogger(__name__)


# Failures other block sizes can cure: too many resources for the chosen tile, or a timeout.
_CURABLE = re.compile(r"OutOfResources|out of resource|shared memory|registers|too many resources", re.I)
# Compiler seeds name each kernel's tile `<kernel>_XBLOCK`, `<kernel>_R0_BLOCK`... and its warps
# `<kernel>_WARPS`. A tile of more than this many elements per thread spills every register and can
# keep ptxas busy for minutes: on the H200 a mean reduction's child with XBLOCK 64 x R0_BLOCK 2048 on
# 2 warps (2048 elements a thread) hit the 180 s evaluation limit, 4x the search's whole budget.
MAX_TILE_ELEMENTS_PER_THREAD = 128
_TILE_BLOCK = re.compile(r"^(?P<kernel>.+)_(?:[XYZ]|R\d_)BLOCK$")
_TILE_WARPS = re.compile(r"^(?P<kernel>.+)_WARPS$")


def tunable_parent(report: EvalReport | None) -> bool:
    """A parent worth tuning: correct, or failed in a way its tunables can change (resources, time).

    Tuning an incorrect kernel, or one that crashes for reasons block sizes do not touch (a replayed
    kernel for another problem, a shape it does not handle), spends evaluations for nothing.
    """
    if report is None:
        return False
    if report.ok or report.status is Status.TIMEOUT:
        return True
    if report.status in (Status.COMPILE_ERROR, Status.RUNTIME_ERROR):
        return bool(_CURABLE.search(report.error_name) or _CURABLE.search(report.feedback))
    return False


def _kernel_tiles(params: dict[str, Any], kernels: set[str] | None = None) -> list[tuple[int, int]]:
    """(elements in the tile, warps) of each compiler-seed kernel whose parameters name both (of
    `kernels` only, where given)."""
    tiles: dict[str, int] = {}
    warps: dict[str, int] = {}
    for name, value in params.items():
        if not isinstance(value, int):
            continue
        if block := _TILE_BLOCK.match(name):
            tiles[block["kernel"]] = tiles.get(block["kernel"], 1) * value
        elif warp := _TILE_WARPS.match(name):
            warps[warp["kernel"]] = value
    return [
        (tile, warps[kernel])
        for kernel, tile in tiles.items()
        if warps.get(kernel, 0) > 0 and (kernels is None or kernel in kernels)
    ]


def _kernels_named(names: Any) -> set[str]:
    return {m["kernel"] for name in names if (m := _TILE_BLOCK.match(name) or _TILE_WARPS.match(name))}


def oversized_tile(params: dict[str, Any]) -> bool:
    """Whether a compiler-seed kernel's tile puts more than MAX_TILE_ELEMENTS_PER_THREAD on a thread."""
    return any(tile > MAX_TILE_ELEMENTS_PER_THREAD * 32 * warps for tile, warps in _kernel_tiles(params))


def undersized_tile(params: dict[str, Any], changed: dict[str, Any]) -> bool:
    """Whether a compiler-seed kernel whose tile or warps `changed` now has more threads than tile
    elements on more than one warp: Triton then repeats the work across the spare threads, and the same
    tile on fewer warps does it without them. (A parent's own such kernel, as Inductor chose it, does not
    stop its other kernels' tuning.) On the H200, L1/5's children with XBLOCK 8 on 4 warps and XBLOCK 2 on
    8 warps ran 40x and 160x slower than the 2 ms best and held the GPU 7 s between them."""
    touched = _kernels_named(changed)
    return any(warps > 1 and tile < 32 * warps for tile, warps in _kernel_tiles(params, touched))


def admissible_choices(tunables: list[Tunable], graph: Any) -> list[Tunable]:
    """The tunables with convolutions in one TF32 pass left out of their precision choices where the
    baselines do not make it promising (compiler_seed.by_promise drops such seeds for the same reasons):
    `compiler_seed.one_pass_worth` for cuDNN's one pass and for ours. A parent already there keeps it."""
    from kernelevolve.variation.compiler_seed import (
        EAGER_CONV_PRECISION,
        PRECISION_TUNABLES,
        eager_precision_passes,
        exact_fp32_slowdown,
        one_pass_worth,
    )

    eager_passes, slowdown = eager_precision_passes(graph), exact_fp32_slowdown(graph)
    allowed = {
        "LIBRARY_CONV_FP32_PRECISION": one_pass_worth(False, eager_passes, slowdown),
        "CONV_FP32_PRECISION": one_pass_worth(True, eager_passes, slowdown),
    }
    return [
        dataclasses.replace(t, choices=tuple(c for c in t.choices if c != EAGER_CONV_PRECISION))
        if t.name in PRECISION_TUNABLES and not allowed.get(t.name, False) and t.value != EAGER_CONV_PRECISION
        else t
        for t in tunables
    ]


def tuned_child(parent: Candidate, changed: dict[str, Any], operator: str = "tune") -> Candidate:
    """`parent` with the literals of the tunables in `changed` rewritten (an unknown name raises
    KeyError); the child records all its parameter values and what changed."""
    source = apply_values(parent.source, changed)
    params = {t.name: t.value for t in find_tunables(source)}
    metadata: dict[str, Any] = {k: v for k, v in parent.metadata.items() if k in ("template", "pattern")}
    precision = _fp32_precision(params, parent.metadata.get("fp32_precision"))
    if precision is not None:  # what the child computes in, as sweep records and evaluation logs show it
        metadata["fp32_precision"] = precision
    return Candidate(
        source=source,
        backend=parent.backend,
        operator=operator,
        mode="tune",
        parent_ids=(parent.id,),
        metadata={**metadata, "params": params, "changed": changed},
    )


def _fp32_precision(params: dict[str, Any], inherited: Any) -> Any:
    """The fp32 dot precision of our own GEMMs and convolutions in a source, where they agree on one."""
    from kernelevolve.variation.compiler_seed import PRECISION_TUNABLES

    values = {params[name] for name in PRECISION_TUNABLES if name in params}
    return values.pop() if len(values) == 1 else inherited


class TuningOperator:
    """Mutates one or two tunables of a parent, preferring the neighbouring values of each.

    A step to an adjacent choice is local search around a good configuration; with probability
    `jump_probability` a random choice is taken instead, so the search can leave a local optimum.
    """

    name = "tune"
    arity = 1

    def __init__(self, max_changes: int = 2, jump_probability: float = 0.2, attempts: int = 12) -> None:
        self.max_changes = max_changes
        self.jump_probability = jump_probability
        self.attempts = attempts

    def _step(self, tunable: Tunable, rng: random.Random) -> Any:
        choices = list(tunable.choices)
        if tunable.value not in choices or rng.random() < self.jump_probability:
            others = [c for c in choices if c != tunable.value]
            return rng.choice(others) if others else tunable.value
        index = choices.index(tunable.value)
        neighbours = [choices[i] for i in (index - 1, index + 1) if 0 <= i < len(choices)]
        return rng.choice(neighbours) if neighbours else tunable.value

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if len(ctx.parents) != 1:
            return []
        node = ctx.graph.node(ctx.parents[0])
        if not tunable_parent(node.report):
            return []
        parent = node.candidate
        tunables = admissible_choices(find_tunables(parent.source), ctx.graph)
        tunables = [t for t in tunables if len(t.choices) > 1]
        if not tunables:
            return []
        children: list[Candidate] = []
        seen = {parent.id}
        for _ in range(self.attempts):
            if len(children) >= max(1, ctx.budget_hint):
                break
            count = min(len(tunables), ctx.rng.randint(1, self.max_changes))
            changed = {t.name: self._step(t, ctx.rng) for t in ctx.rng.sample(tunables, count)}
            changed = {
                k: v for k, v in changed.items() if v != next(t.value for t in tunables if t.name == k)
            }
            if not changed:
                continue
            child = tuned_child(parent, changed, self.name)
            params = child.metadata["params"]
            if oversized_tile(params) or undersized_tile(params, changed):
                continue
            if child.id in seen or child.id in ctx.graph:
                continue
            seen.add(child.id)
            children.append(child)
        return children
