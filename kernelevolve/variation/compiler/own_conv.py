"""Our Triton implicit-GEMM convolution in place of the convolutions Inductor leaves to cuDNN.

`torch.convolution(...)` calls of the host steps (1-, 2- or 3-D, plain or transposed, any stride,
padding, dilation, output padding and groups) become `_conv(...)`: output pixels x output channels
as a GEMM over input channels x kernel taps (a transposed convolution gathers the input positions
that map onto each output), with the bias fused, written in the layout Inductor's next kernels expect
(its `assert_size_stride` after the call gives it). fp32 dot products are IEEE fp32 by default, or
3xTF32 (CONV_FP32_PRECISION): tensor cores at near-fp32 accuracy, several times the FFMA rate cuDNN's
exact fp32 convolutions run at.

Two K loops (CONV_LOOP). "fused" steps through (input channel x tap) flattened, decoding channel and
tap and testing validity for every element of each BLOCK_M x BLOCK_K tile. "taps" steps through taps,
then input channels BLOCK_K at a time: index and validity are a BLOCK_M vector a step, the A tile is
row + channel * stride. For a transposed convolution each "taps" program takes the output pixels of one
stride phase (o % stride, per dimension): a tap reaches all of them or none, so only the taps reaching
the phase are visited, 1 / stride^d of them, where "fused" multiplies zeros for the rest. Seeds take
"auto": "fused" (a few input channels' taps packed into one K step without padding each tap to BLOCK_K)
for plain convolutions of fewer than 16 input channels per group, "taps" for the rest. On the H200,
"taps" ran strided transposed convolutions 1.8-15.7x faster than "fused", stride-1 ones 0.89-3.4x as
fast, and plain 1-D and 2-D convolutions of 16 or more channels 1.15-6.5x faster in Inductor's
channels-last layout (3 of 4 faster in NCHW) (experiments/conv_loop_h200); on the 8-channel 3x3
convolution of L2/82 "fused" took 18.3 ms to "taps"' 32.2 ms (3xBF16, experiments/full_sweep_h200).

A depthwise convolution (one input channel per group: MobileNet's, KernelBench L1/83) would use one
of the GEMM tile's columns per group, so it goes to a direct kernel instead: each program sums the
taps of a block of output pixels of one output channel in fp32 FMAs, reading along the width.
"""

from __future__ import annotations

import ast

from kernelevolve.variation.kernels import kernel_source, kernel_tunables

CONVOLUTION = "torch.convolution"  # how the host steps spell a library convolution (program.parse)

# the convolutions' code and their tunables (kernels/conv.py); a blank line first, as in GEMM_SOURCE
CONV_TUNABLES = kernel_tunables("conv")
CONV_SOURCE = "\n" + kernel_source("conv")


def conv_substitutable(call: ast.Call) -> bool:
    """A torch.convolution call whose stride is written out (1, 2 or 3 spatial dimensions)."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    stride = keywords.get("stride", call.args[3] if len(call.args) > 3 else None)
    return isinstance(stride, (ast.Tuple, ast.List)) and 1 <= len(stride.elts) <= 3


class OwnConv(ast.NodeTransformer):
    """Rewrite torch.convolution calls as `_conv(...)` in the layout the following assert recorded."""

    def __init__(self, layouts: dict[str, tuple[str, str]]) -> None:
        self.layouts = layouts

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        call = node.value
        if not (isinstance(call, ast.Call) and ast.unparse(call.func) == CONVOLUTION):
            return node
        names = [
            "input",
            "weight",
            "bias",
            "stride",
            "padding",
            "dilation",
            "transposed",
            "output_padding",
            "groups",
        ]
        values = dict(zip(names, call.args, strict=False))
        values.update({k.arg: k.value for k in call.keywords if k.arg})
        keywords = [
            ast.keyword(arg=k, value=values[k])
            for k in ("bias", "stride", "padding", "dilation", "groups", "transposed", "output_padding")
            if k in values
        ]
        target = ast.unparse(node.targets[0])
        if target in self.layouts:
            size, stride = self.layouts[target]
            keywords += [
                ast.keyword(arg="out_size", value=ast.parse(size, mode="eval").body),
                ast.keyword(arg="out_stride", value=ast.parse(stride, mode="eval").body),
            ]
        node.value = ast.Call(
            func=ast.Name("_conv", ast.Load()), args=[values["input"], values["weight"]], keywords=keywords
        )
        return node
