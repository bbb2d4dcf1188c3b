"""Does a candidate do all its work in our own kernels, or does it call PyTorch's libraries?

A permissive run accepts candidates that keep library calls (torch.mm, convolution: compiler_seed's
do); the answer here is the strict static check on the source, so "own kernels only" means exactly
what a strict run would have accepted. Pure AST work, cached by candidate id (a hash of the source),
so the parent can ask it of every node of a graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelevolve.types import Candidate

LIBRARY_CODE = "torch_compute_op"  # the strict-only check that PyTorch (cuBLAS, cuDNN, ATen) does work


@dataclass(frozen=True)
class KernelUse:
    own_kernels_only: bool  # passes every strict static check
    uses_library: bool  # PyTorch compute ops do part of the work
    strict_issues: tuple[str, ...] = ()  # codes a strict run would reject it with


_cache: dict[str, KernelUse] = {}


def kernel_use(candidate: Candidate) -> KernelUse:
    cached = _cache.get(candidate.id)
    if cached is None:
        cached = _cache[candidate.id] = _classify(candidate.source, candidate.backend)
    return cached


def _classify(source: str, backend: str) -> KernelUse:
    from kernelevolve.eval.static.checks import check_source

    try:
        codes = tuple(sorted({issue.code for issue in check_source(source, backend, strict=True)}))
    except ValueError:  # a backend the static checks do not know: it cannot have passed a strict run
        codes = ("unknown_backend",)
    return KernelUse(own_kernels_only=not codes, uses_library=LIBRARY_CODE in codes, strict_issues=codes)
