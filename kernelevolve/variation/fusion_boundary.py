"""The fusion-boundary operator: a compiler seed re-captured with Inductor told to cut kernels elsewhere.

Arity 1, no model. Inductor decides where one kernel ends and the next begins (which intermediates
are written out, whether a reduction is split in two, whether it loops) by heuristics tuned for the
average program; for a given problem and GPU another choice can be faster. A parent made by
`compiler_seed` (or by this operator) is re-captured at every shape with one more "fusion plan" (a
few `torch._inductor.config` patches, `PLANS`) on top of the config it was captured with, and rendered
as its parent was (own kernels or library calls, the same tensor-core precision). Plans accumulate
down a line of children, each applied once. A plan that leaves every kernel as it was gives no child;
so does a capture or rendering that fails (logged, never raised).
"""

from __future__ import annotations

import ast
import logging
import re
import threading
from collections.abc import Sequence
from typing import Any

from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.types import Candidate
from kernelevolve.variation.compiler.capture import CaptureSettings
from kernelevolve.variation.compiler_seed import (
    BACKEND,
    TENSOR_CORE_PRECISIONS,
    capture_device,
    capture_programs,
    capture_settings,
    render_variant,
    with_tensor_cores,
)

log = logging.getLogger(__name__)

# Each plan was seen to change Inductor's kernels (torch 2.13, captured for the CPU as the tests do;
# tests/test_fusion_boundary.py keeps a reference for each). Why each can pay off on a GPU:
PLANS: dict[str, dict[str, Any]] = {
    # Independent pointwise kernels over the same number of elements become one kernel: one launch
    # instead of several, which is most of the time of small, launch-bound problems. `aggressive_fusion`
    # alone lets such pairs be considered, but the shared-bytes threshold still rejects them.
    "aggressive_fusion": {"aggressive_fusion": True, "score_fusion_memory_threshold": 0},
    # A reduction to few outputs in one kernel instead of two (partial sums, then their sum): no
    # intermediate buffer and one launch fewer, better where the reduced size is moderate or the
    # outputs are many enough to fill the GPU.
    "unsplit_reductions": {"split_reductions": False},
    # Reductions that loop over the reduced dimension in blocks instead of holding a whole row in
    # registers: no spills and higher occupancy on long rows (softmax, norms over 4-16k elements).
    "looped_reductions": {"triton.persistent_reductions": False},
    # Intermediates read by several consumers are recomputed inside each of them instead of being
    # written out and read back (defaults: 4 reads, 30 ops, 8 accumulated reads on GPUs): trades
    # cheap arithmetic for a round trip through HBM, the usual bound.
    "recompute_intermediates": {
        "realize_reads_threshold": 16,
        "realize_opcount_threshold": 200,
        "realize_acc_reads_threshold": 32,
    },
    # The opposite: intermediates written out once instead of being recomputed by every consumer,
    # which pays where they are expensive (exp, erf) or the fused kernel runs short of registers.
    "materialize_intermediates": {
        "realize_reads_threshold": 1,
        "realize_opcount_threshold": 1,
        "realize_acc_reads_threshold": 1,
    },
}
PARENT_OPERATORS = ("compiler_seed", "fusion_boundary")


class FusionBoundaryOperator:
    name = "fusion_boundary"
    arity = 1

    def __init__(self, plans: Sequence[str] = tuple(PLANS)) -> None:
        unknown = [p for p in plans if p not in PLANS]
        if unknown:
            raise ValueError(f"unknown fusion plan(s) {unknown}; valid: {', '.join(PLANS)}")
        self.plans = tuple(plans)
        # (spec, platform, layout, config) -> programs at every shape, None where capture failed
        self._captures: dict[tuple[Any, ...], list[Any] | None] = {}
        self._lock = threading.Lock()  # proposals run in threads; each capture happens once
        self._told: set[tuple[str, str]] = set()  # (parent, plan) already logged as changing nothing

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if BACKEND not in ctx.backends or len(ctx.parents) != 1 or ctx.parents[0] not in ctx.graph:
            return []
        node = ctx.graph.node(ctx.parents[0])
        parent = node.candidate
        if (
            parent.operator not in PARENT_OPERATORS
            or parent.backend != BACKEND
            or parent.metadata.get("source") != "inductor"
            or not parent.metadata.get("kernels")  # library calls only: no kernel boundary to move
            or node.report is None
            or not node.report.ok
        ):
            return []
        settings, applied = capture_settings(parent.metadata)
        done = list(parent.metadata.get("fusion_plans") or [])
        # A plan touching a key an earlier plan set would undo it (recompute after materialize).
        remaining = [p for p in self.plans if p not in done and not set(PLANS[p]) & set(applied)]
        ctx.rng.shuffle(remaining)
        seen = {kernel_fingerprint(parent.source)}
        children: list[Candidate] = []
        for plan in remaining:
            if len(children) >= max(1, ctx.budget_hint):
                break
            child = self._child(ctx, parent, settings, applied, [*done, plan])
            if child is None or child.id in ctx.graph:
                continue
            fingerprint = kernel_fingerprint(child.source)
            if fingerprint in seen:
                if (parent.id, plan) not in self._told:  # the parent is proposed from again and again
                    self._told.add((parent.id, plan))
                    log.info("fusion_boundary: %s leaves %s's kernels as they were", plan, ctx.spec.name)
                continue
            seen.add(fingerprint)
            children.append(child)
        return children

    def _child(
        self,
        ctx: ProposalContext,
        parent: Candidate,
        settings: CaptureSettings,
        applied: dict[str, Any],
        plans: list[str],
    ) -> Candidate | None:
        from kernelevolve.variation.compiler.render import RenderError

        config = {**applied, **PLANS[plans[-1]]}
        device = capture_device(ctx)
        programs = self._programs(ctx, device, settings, config)
        if programs is None:
            log.info("fusion_boundary: no child of %s with %s (capture failed)", parent.id, plans[-1])
            return None
        try:
            source, metadata = render_variant(ctx, programs, device, bool(parent.metadata.get("own_kernels")))
        except RenderError as exc:
            log.info("fusion_boundary: no child of %s with %s: %s", parent.id, plans[-1], exc)
            return None
        except Exception as exc:  # a bug or an Inductor surprise must not stop the search
            log.warning("fusion_boundary: rendering failed with %s: %s", plans[-1], exc, exc_info=True)
            return None
        precision = parent.metadata.get("fp32_precision")
        twin = with_tensor_cores(source, precision) if precision in TENSOR_CORE_PRECISIONS else None
        if twin is not None:  # the parent's fp32 dot products were on tensor cores: the child's are too
            source, metadata["fp32_precision"] = twin, precision
        metadata.update(settings.recorded(), inductor_config=config, fusion_plans=plans)
        return Candidate(source, BACKEND, self.name, "fusion", parent_ids=(parent.id,), metadata=metadata)

    def _programs(
        self, ctx: ProposalContext, device: str, settings: CaptureSettings, config: dict[str, Any]
    ) -> list[Any] | None:
        key = (ctx.spec.key, ctx.platform.name, settings, tuple(sorted(config.items())))
        with self._lock:
            if key not in self._captures:
                self._captures[key] = capture_programs(ctx, device, settings, config, operator=self.name)
            return self._captures[key]


_NUMBERED = re.compile(r"\b(?:in_out_ptr|in_ptr|out_ptr|tmp)\d+\b")


def kernel_fingerprint(source: str) -> tuple[tuple[str, ...], ...] | None:
    """The statements of each of the source's Triton kernels, Inductor's pointer and temporary names
    taken out and put in order: a plan can renumber buffers, write one in place or reorder operands
    without changing any kernel's work, and such a child is not worth an evaluation. None for source
    that does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    kernels = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            statements = ast.unparse(ast.Module(body=node.body, type_ignores=[])).splitlines()
            kernels.append(tuple(sorted(_NUMBERED.sub("_", line) for line in statements)))
    return tuple(sorted(kernels))
