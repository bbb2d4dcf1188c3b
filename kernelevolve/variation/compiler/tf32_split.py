"""The hi/lo split that cuDNN's and cuBLAS's near-fp32 passes share (library_conv.py, library_gemm.py).

t = hi + lo exactly, hi keeping the sign, the exponent and TF32's 10 mantissa bits: a TF32 pass
multiplies hi parts exactly (products of two 11-bit significands fit fp32's 24), and lo is within 2^-10
of t. Rendered once into a seed that holds either library wrapper.
"""

from __future__ import annotations

TF32_SPLIT_SOURCE = """
def _ke_tf32_hi(t):
    # the sign, exponent and TF32's 10 mantissa bits (0xFFFFE000)
    return (t.view(torch.int32) & -8192).view(torch.float32)


def _ke_tf32_split(t):
    # t = hi + lo exactly
    hi = _ke_tf32_hi(t)
    return hi, t - hi
"""
