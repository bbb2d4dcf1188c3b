# good: torch.frexp as two outputs of different dtypes (float32 mantissa in [0.5, 1), int32 exponent), one
# Triton kernel reading each float's bits: the biased exponent field gives e - 126, the mantissa keeps
# sign and fraction with the exponent field set to 126; zeros give (0, 0); subnormals are renormalised by
# scaling with 2**23 first (inputs here are normal, but the kernel handles them)
# spec: kb_frexp
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def frexp_kernel(x_ptr, m_ptr, e_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    sub = (tl.abs(x) < 1.1754943508222875e-38) & (x != 0.0)
    xs = tl.where(sub, x * 8388608.0, x)
    bits = xs.to(tl.int32, bitcast=True)
    field = (bits >> 23) & 0xFF
    exponent = field - 126 - tl.where(sub, 23, 0)
    mant_bits = (bits & -2139095041) | (126 << 23)  # clear the exponent field (~0x7F800000), set 126
    mantissa = mant_bits.to(tl.float32, bitcast=True)
    zero = x == 0.0
    tl.store(m_ptr + offs, tl.where(zero, x, mantissa), mask=mask)
    tl.store(e_ptr + offs, tl.where(zero, 0, exponent), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        mantissa = torch.empty_like(x)
        exponent = torch.empty(x.shape, device=x.device, dtype=torch.int32)
        n = x.numel()
        frexp_kernel[(triton.cdiv(n, 256),)](x, mantissa, exponent, n, BLOCK=256)
        return mantissa, exponent
