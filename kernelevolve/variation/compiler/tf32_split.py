"""The hi/lo split that cuDNN's and cuBLAS's near-fp32 passes share (library_conv.py, library_gemm.py).

t = hi + lo exactly, hi keeping the sign, the exponent and TF32's 10 mantissa bits: a TF32 pass
multiplies hi parts exactly (products of two 11-bit significands fit fp32's 24), and lo is within 2^-10
of t. Rendered once into a seed that holds either library wrapper.

Both wrappers' BF16 passes take a pair: t's hi and lo halves side by side along one dim (the convolution's
input channels, within each group; the GEMM's K), in bf16. On a GPU one Triton kernel (`_ke_split_into`)
reads t once and writes hi and both halves of the pair, where PyTorch's three elementwise ops (mask, copy,
subtraction) read t twice and hi twice: half the traffic. It rounds to bf16 in integer arithmetic, to
nearest with ties to even as PyTorch does, so Triton's interpreter (which truncates) computes what the GPU
does. A layout it does not cover (dims that do not merge, tensors with gaps) keeps PyTorch's ops.

The convolution's one-pass 3xTF32 takes a triple instead: t's hi, lo and hi parts (or hi, hi, lo) side by
side along the input channels within each group, in fp32, which `_ke_split_triple_into` writes from one
read of t.
"""

from __future__ import annotations

from kernelevolve.variation.kernels import kernel_source

# the split and the fused split (kernels/tf32_split.py, kernels/tf32_split_kernel.py: needs Triton, so
# only in seeds for a GPU); a blank line first, as seeds join pieces by newlines
TF32_SPLIT_SOURCE = "\n" + kernel_source("tf32_split")
TF32_SPLIT_KERNEL_SOURCE = "\n" + kernel_source("tf32_split_kernel")
