"""The recurrent-seed operator: a reference's nn.LSTM and nn.GRU layers replaced by ours.

Arity 0, permissive runs only (the GEMMs are cuBLAS calls). The candidate is the reference's Model,
renamed ModelNew, with every `nn.LSTM(...)` / `nn.GRU(...)` constructed as `_KeLSTM(...)` /
`_KeGRU(...)` (recurrent_source.py): the rest of the model stays as the reference wrote it. Compiler
seeds cannot cover these problems (Dynamo does not trace RNN modules), so without this operator they
have no candidate at all.
"""

from __future__ import annotations

import ast

from kernelevolve.variation.recurrent_source import RECURRENT_CLASSES, RECURRENT_SOURCE
from kernelevolve.variation.reference_copy import ReferenceCopySeed, reference_statements, unparse

_HEADER = "import math\n\nimport torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"


class RecurrentSeedOperator(ReferenceCopySeed):
    name = "recurrent_seed"
    metadata_key = "recurrent"

    def make(self, reference_source: str) -> tuple[str, list[str]]:
        return recurrent_candidate(reference_source)


class _Substitute(ast.NodeTransformer):
    """nn.LSTM / torch.nn.LSTM (and GRU) constructions as our classes."""

    def __init__(self) -> None:
        self.replaced: list[str] = []

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = ast.unparse(node.func)
        kind = func.rsplit(".", 1)[-1]
        if kind in RECURRENT_CLASSES and func in (kind, f"nn.{kind}", f"torch.nn.{kind}"):
            self.replaced.append(kind)
            node.func = ast.Name(RECURRENT_CLASSES[kind], ast.Load())
        return node


def recurrent_candidate(reference_source: str) -> tuple[str, list[str]]:
    """(candidate source, the recurrent layers replaced, one entry per construction): the reference copied
    (reference_copy.py) with our layers; no layers replaced where the reference has none."""
    substitute = _Substitute()
    kept = reference_statements(reference_source, substitute)
    if not substitute.replaced:
        return "", []
    source = f'"""The reference with its recurrent layers in our kernels (recurrent_seed)."""\n\n{_HEADER}'
    return source + RECURRENT_SOURCE + "\n\n" + unparse(kept) + "\n", substitute.replaced
