"""Our Triton GEMM in place of the library matmuls Inductor keeps, for strict-mode compiler seeds.

`mm`, `addmm`, `bmm` and `baddbmm` calls in the host steps become `_matmul(...)`: a grouped-tile Triton
kernel with the bias/alpha/beta epilogue fused, which loads transposed operands in their memory order and
splits a long K across programs (kernels/gemm.py, the code seeds paste in). Its tile sizes, warps, stages,
K split and fp32 precision are tunables.
"""

from __future__ import annotations

import ast

from kernelevolve.variation.compiler.own_attention import FUSED_OPS
from kernelevolve.variation.compiler.own_conv import CONVOLUTION
from kernelevolve.variation.kernels import kernel_source, kernel_tunables

SUBSTITUTED = ("torch.mm", "torch.addmm", "torch.bmm", "torch.baddbmm")

# the GEMM's code and its tunables (kernels/gemm.py); a blank line first, as seeds join pieces by newlines
GEMM_TUNABLES = kernel_tunables("gemm")
GEMM_SOURCE = "\n" + kernel_source("gemm")


def substitutable(library_calls: tuple[str, ...], convolutions_substitutable: bool = True) -> bool:
    """Whether every library call can become our own kernel (GEMM, convolution of 1-3 dimensions, or
    fused attention: own_attention.py)."""
    return bool(library_calls) and all(
        call in SUBSTITUTED or call in FUSED_OPS or (call == CONVOLUTION and convolutions_substitutable)
        for call in library_calls
    )


def gemm_operands(func: str, node: ast.Call) -> tuple[ast.expr, ast.expr, list[ast.keyword]]:
    """A torch.mm/addmm/bmm/baddbmm call's operands and its `out`, `bias`, `alpha` and `beta` keywords,
    whether it passed them by position or by name: the arguments of `_matmul`-shaped helpers."""
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    args = list(node.args)
    if func in ("torch.addmm", "torch.baddbmm"):
        bias, a, b = (args + [None, None, None])[:3]
        keywords.setdefault("bias", bias or keywords.pop("input"))
        a = a or keywords.pop("mat1", None) or keywords.pop("batch1")
        b = b or keywords.pop("mat2", None) or keywords.pop("batch2")
    else:
        a, b = (args + [None, None])[:2]
        a = a or keywords.pop("input")
        b = b or keywords.pop("mat2")
    kept = [ast.keyword(arg=k, value=v) for k, v in keywords.items() if k in ("out", "bias", "alpha", "beta")]
    return a, b, kept


class OwnGemm(ast.NodeTransformer):
    """Rewrite torch.mm/addmm/bmm/baddbmm calls of the host steps as `_matmul` calls (subclasses: as
    calls of their own `function`, same arguments)."""

    function = "_matmul"

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = ast.unparse(node.func)
        if func not in SUBSTITUTED:
            return node
        a, b, keywords = gemm_operands(func, node)
        call = ast.Call(func=ast.Name(self.function, ast.Load()), args=[a, b], keywords=keywords)
        return ast.copy_location(call, node)
