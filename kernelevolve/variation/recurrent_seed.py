"""The recurrent-seed operator: a reference's nn.LSTM and nn.GRU layers replaced by ours.

Arity 0. The candidate is the reference's Model, renamed ModelNew, with every `nn.LSTM(...)` /
`nn.GRU(...)` constructed as `_KeLSTM(...)` / `_KeGRU(...)` (recurrent_source.py): the rest of the model
stays as the reference wrote it, and the GEMMs are cuBLAS calls (permissive runs). Its own-kernels twin
runs the GEMMs in our Triton GEMM, each layer's steps in one launch (`RNN_STEPS = "grid"`), and
constructs the reference's nn.Linear layers as `_KeLinear(...)` too; where nothing else computes in
PyTorch (KernelBench's LSTM and GRU problems: recurrent layers and a final Linear), it passes strict mode
and is offered in strict runs. Compiler seeds cannot cover these problems (Dynamo does not trace RNN
modules), so without this operator they have no candidate at all.

A step at a time, the permissive seed is host-bound by construction (two launches a step, 3,072 steps in
L3/35), so on CUDA it is offered first as its CUDA-graph replay (graph_replay.py), then the own-kernels
twin, then itself. Left to the graph-replay operator's follow-up, the replay waited behind both seeds,
whose evaluations used the whole budget (experiments/full_sweep_h200).
"""

from __future__ import annotations

import ast

from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.types import Candidate
from kernelevolve.variation.recurrent_source import (
    LIBRARY_RNN_MATMUL,
    LINEAR_CLASS,
    OWN_LINEAR_SOURCE,
    OWN_RNN_MATMUL,
    RECURRENT_CLASSES,
    RECURRENT_SOURCE,
    STEPS_GRID,
    STEPS_PER_STEP,
)
from kernelevolve.variation.reference_copy import ReferenceCopySeed, reference_statements, unparse

_HEADER = "import math\n\nimport torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"


class RecurrentSeedOperator(ReferenceCopySeed):
    name = "recurrent_seed"
    metadata_key = "recurrent"

    def make(self, reference_source: str) -> tuple[str, list[str]]:
        return recurrent_candidate(reference_source)

    def make_own(self, reference_source: str, interpreter: bool) -> tuple[str, list[str]]:
        return recurrent_candidate(reference_source, own_kernels=True)

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        seeds = super().propose(ctx)
        if self.strict or ctx.platform.device != "cuda":
            return seeds
        own = [s for s in seeds if s.metadata.get("own_kernels")]
        library = [s for s in seeds if not s.metadata.get("own_kernels")]
        return [*(_replayed(s) for s in library), *own, *library]


def _replayed(seed: Candidate) -> Candidate:
    """The seed's forward replayed from a CUDA graph, a seed itself (the graph-replay operator leaves it be)."""
    from kernelevolve.variation.graph_replay import with_graph_replay

    metadata = {**seed.metadata, "graph_replay": True}
    return Candidate(with_graph_replay(seed.source), seed.backend, seed.operator, "seed", metadata=metadata)


class _Substitute(ast.NodeTransformer):
    """nn.LSTM / torch.nn.LSTM (and GRU) constructions as our classes; nn.Linear too if `linear`."""

    def __init__(self, linear: bool) -> None:
        self.classes = {**RECURRENT_CLASSES, **({"Linear": LINEAR_CLASS} if linear else {})}
        self.replaced: list[str] = []

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = ast.unparse(node.func)
        kind = func.rsplit(".", 1)[-1]
        if kind in self.classes and func in (kind, f"nn.{kind}", f"torch.nn.{kind}"):
            self.replaced.append(kind)
            node.func = ast.Name(self.classes[kind], ast.Load())
        return node


def recurrent_candidate(reference_source: str, own_kernels: bool = False) -> tuple[str, list[str]]:
    """(candidate source, the layers replaced, one entry per construction): the reference copied
    (reference_copy.py) with our recurrent layers, their GEMMs in cuBLAS or (`own_kernels`) in our Triton
    GEMM with the Linear layers too; nothing where the reference has no recurrent layer."""
    substitute = _Substitute(linear=own_kernels)
    kept = reference_statements(reference_source, substitute)
    if not set(substitute.replaced) & set(RECURRENT_CLASSES):
        return "", []
    where = "our kernels" if own_kernels else "our kernels, their GEMMs in cuBLAS"
    source = f'"""The reference with its recurrent layers in {where} (recurrent_seed)."""\n\n{_HEADER}'
    matmul = OWN_RNN_MATMUL + OWN_LINEAR_SOURCE if own_kernels else LIBRARY_RNN_MATMUL
    # the twin runs each layer in one launch (strict runs reject the CUDA graphs that rescue per-step launches)
    recurrent = RECURRENT_SOURCE.replace(STEPS_PER_STEP, STEPS_GRID) if own_kernels else RECURRENT_SOURCE
    return source + matmul + recurrent + "\n\n" + unparse(kept) + "\n", substitute.replaced
