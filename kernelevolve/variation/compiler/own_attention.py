"""Our Triton attention in place of the fused attention op Inductor keeps, for strict-mode compiler seeds.

Inductor leaves `F.scaled_dot_product_attention` (and nn.MultiheadAttention's fast path) as one fallback
op: `_scaled_dot_product_efficient_attention` for fp32 on CUDA, `_scaled_dot_product_flash_attention` for
fp16/bf16 there, `_scaled_dot_product_flash_attention_for_cpu` on the CPU. With it a seed could only run in permissive mode
(experiments/own_attention_cpu). Each such call in the host steps becomes a call of a helper with the
op's own signature and outputs, so the steps after it (`buf[0]`, views of it) read what they read before:
the output in the layout the op gives (efficient attention's (B, M, H, Ev) storage seen as (B, H, M, Ev); the
flash ops' `empty_like(query)`), its log-sum-exp where the op returns one, and empty RNG state: the layouts
of the ops' meta functions, which Inductor's code after the call was written against.

The kernel is a flash-attention forward: each program owns a block of query rows of one (batch, head) and
streams keys and values through an online softmax, so the score matrix never reaches memory; any strides,
key and value head sizes up to 256, and top-left causal masking (PyTorch's `is_causal`). An attention mask or
bias, or dropout, is refused with an error (the candidate fails and the search records why). Block sizes,
warps, stages and the fp32 dot precision are tunables.
"""

from __future__ import annotations

import ast

from kernelevolve.variation.compiler.own_encoder import ENCODER_OPS
from kernelevolve.variation.compiler.program import library_op_name
from kernelevolve.variation.kernels import kernel_source, kernel_tunables

# Inductor's fused attention ops, and the helper (in ATTENTION_SOURCE) that takes each one's place
ATTENTION_OPS = {
    "torch.ops.aten._scaled_dot_product_efficient_attention.default": "_own_efficient_attention",
    "torch.ops.aten._scaled_dot_product_flash_attention.default": "_own_flash_attention",
    "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default": "_own_cpu_flash_attention",
}

# the largest query or value head size `_ke_attention` takes (its check in ATTENTION_SOURCE says the same):
# a capture with a wider one gets no own seed, and attention as matmuls first (compiler_seed)
MAX_HEAD_DIM = 256

# every fused op our helpers replace: the attention ops, and the transformer encoder layer (own_encoder.py)
FUSED_OPS = {**ATTENTION_OPS, **ENCODER_OPS}

# the kernel, the helpers and their tunables (kernels/attention.py); a blank line first, as in GEMM_SOURCE
ATTENTION_TUNABLES = kernel_tunables("attention")
ATTENTION_SOURCE = "\n" + kernel_source("attention")


class OwnAttention(ast.NodeTransformer):
    """Host steps' fused attention and encoder-layer op calls (`FUSED_OPS`, either spelling) as calls of
    our helpers, same arguments."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        helper = FUSED_OPS.get(library_op_name(ast.unparse(node.func)))
        if helper is None:
            return node
        return ast.copy_location(ast.Call(ast.Name(helper, ast.Load()), node.args, node.keywords), node)
