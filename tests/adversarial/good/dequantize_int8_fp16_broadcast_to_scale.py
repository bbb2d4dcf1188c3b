# good: int8 dequantization as a generic strided product kernel: the per-row scale expanded to the
# weight's shape by scale[:, None].broadcast_to(weight.shape) (a zero-stride view, no copy), both operands
# read through their strides, fp32 product rounded once to fp16
# spec: shipped:dequantize_int8
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def strided_mul_kernel(
    a_ptr, b_ptr, out_ptr, rows, cols, sa_r, sa_c, sb_r, sb_c, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr
):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    a = tl.load(a_ptr + r[:, None] * sa_r + c[None, :] * sa_c, mask=mask, other=0)
    b = tl.load(b_ptr + r[:, None] * sb_r + c[None, :] * sb_c, mask=mask, other=0.0)
    out = a.to(tl.float32) * b.to(tl.float32)
    tl.store(out_ptr + r[:, None] * cols + c[None, :], out.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        rows, cols = weight.shape
        scale2d = scale[:, None].broadcast_to(weight.shape)
        out = torch.empty((rows, cols), device=weight.device, dtype=scale.dtype)
        grid = (triton.cdiv(rows, 8), triton.cdiv(cols, 32))
        strided_mul_kernel[grid](
            weight, scale2d, out, rows, cols, *weight.stride(), *scale2d.stride(), BLOCK_R=8, BLOCK_C=32
        )
        return out
