"""A copy of the reference for seeds that keep its structure and swap parts of it for our kernels.

Seeds made this way (recurrent_seed, elementwise_seed) keep everything a model does in Python: state it
keeps between calls, control flow, the order its constructor draws random weights in. The copy is the
reference's imports, constants, functions and classes, with `Model` renamed `ModelNew`; get_inputs and
get_init_inputs are dropped (the harness takes them from the reference), as is other module-level code.

A seed the static checks would reject is not proposed. Where eager's own TF32 output met the tolerance,
the seed runs its convolutions as eager does (eager_precision.py) instead of at the harness's exact fp32.
"""

from __future__ import annotations

import ast
import functools
import logging
from collections.abc import Callable

from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.types import Candidate

log = logging.getLogger(__name__)

BACKEND = "triton"

_HARNESS_FUNCTIONS = ("get_inputs", "get_init_inputs")
# reference source -> (candidate source, what it replaced), or None: a seed's maker
_Maker = Callable[[str], "tuple[str, list[str]] | None"]
_KEPT = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.ClassDef)


class _RenameModel(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name("ModelNew", node.ctx) if node.id == "Model" else node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.generic_visit(node)
        if node.name == "Model":
            node.name = "ModelNew"
        return node


def reference_statements(reference_source: str, *transformers: ast.NodeTransformer) -> list[ast.stmt]:
    """The reference's kept statements, each passed through `transformers` in order, then renamed.
    Raises SyntaxError for a reference that does not parse and ValueError where it has no class Model."""
    kept: list[ast.stmt] = []
    for stmt in ast.parse(reference_source).body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in _HARNESS_FUNCTIONS:
            continue
        if isinstance(stmt, _KEPT):
            for transformer in (*transformers, _RenameModel()):
                stmt = transformer.visit(stmt)
            kept.append(stmt)
    if not any(isinstance(s, ast.ClassDef) and s.name == "ModelNew" for s in kept):
        raise ValueError("reference has no class Model")
    return kept


def unparse(statements: list[ast.stmt]) -> str:
    return ast.unparse(ast.fix_missing_locations(ast.Module(statements, [])))


class ReferenceCopySeed:
    """An arity-0 operator offering Triton seeds: `make(reference_source)` gives (source, what it
    replaced), nothing replaced meaning no seed, offered in permissive runs; `make_own(reference_source, interpreter)`,
    where a subclass has one, a twin doing all the work in our kernels, offered in strict runs too and
    proposed only where the strict static checks pass it. Metadata lists what was replaced under
    `metadata_key`, the source's tunables under "params", and whether it is the own-kernels twin."""

    name = "reference_copy"
    metadata_key = "replaced"
    arity = 0

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict

    def make(self, reference_source: str) -> tuple[str, list[str]]:
        raise NotImplementedError

    def make_own(self, reference_source: str, interpreter: bool) -> tuple[str, list[str]] | None:
        """The own-kernels twin; `interpreter`: for Triton's interpreter (the CPU platform), which takes
        no bf16x3 dot."""
        return None

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if BACKEND not in ctx.backends:
            return []
        own: _Maker = functools.partial(self.make_own, interpreter=ctx.platform.device == "cpu")
        makers: list[tuple[_Maker, bool]] = (
            [(own, True)] if self.strict else [(self.make, False), (own, True)]
        )
        seeds: list[Candidate] = []
        for make, own_kernels in makers:
            try:
                made = make(ctx.spec.reference_source)
            except (SyntaxError, ValueError) as exc:
                log.info("%s: no seed for %s: %s", self.name, ctx.spec.name, exc)
                return seeds
            seed = self._seed(ctx, *made, own_kernels) if made is not None and made[1] else None
            if seed is not None:
                seeds.append(seed)
        return seeds

    def _seed(
        self, ctx: ProposalContext, source: str, replaced: list[str], own_kernels: bool
    ) -> Candidate | None:
        """The seed made of `source`, None where the static checks would reject it."""
        from kernelevolve.eval.static.checks import candidate_issues
        from kernelevolve.variation.template_library import tunable_values

        issues = candidate_issues(source, BACKEND, own_kernels, ctx.spec.reference_source)
        if issues:
            # e.g. activations held only inside nn.Sequential (SqueezeNet, VGG): their launches are not
            # on ModelNew's call path as the checks can see it, so the harness would reject the seed
            which = "own-kernels seed" if own_kernels else "seed"
            log.info("%s: no %s for %s: %s", self.name, which, ctx.spec.name, issues[0].message)
            return None
        kinds = sorted(set(replaced))
        metadata: dict[str, object] = {self.metadata_key: kinds, "params": tunable_values(source)}
        if own_kernels:
            metadata["own_kernels"] = True
        at_eager_precision = None if own_kernels else _at_eager_precision(source, ctx)
        if at_eager_precision is not None:
            # the same copy, slower at exact fp32: where eager's TF32 output passes, only this one
            source, metadata["fp32_precision"] = at_eager_precision, "tf32"
        log.info(
            "%s: %s with our %s%s%s",
            self.name,
            ctx.spec.name,
            ", ".join(kinds),
            "; convolutions in TF32, as eager runs them" if at_eager_precision else "",
            "; all of its work in our kernels" if own_kernels else "",
        )
        return Candidate(source, BACKEND, self.name, "seed", metadata=metadata)


def _at_eager_precision(source: str, ctx: ProposalContext) -> str | None:
    """The seed with its library convolutions in one TF32 pass, where the recorded baselines show
    eager's own TF32 output within the tolerance (and the static checks still pass); else None."""
    from kernelevolve.eval.static.checks import candidate_issues
    from kernelevolve.variation.compiler_seed import eager_precision_passes
    from kernelevolve.variation.eager_precision import at_eager_precision

    if not eager_precision_passes(ctx.graph):
        return None
    wrapped = at_eager_precision(source)
    if wrapped is None or candidate_issues(wrapped, BACKEND, False, ctx.spec.reference_source):
        return None
    return wrapped
