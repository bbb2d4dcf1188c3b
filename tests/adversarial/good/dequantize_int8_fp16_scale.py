# good: int8 weight dequantisation to fp16: an int8 input and an fp16 per-row scale, the product in fp32
# rounded once to fp16 (what PyTorch's fp16 multiply does), the output dtype taken from the scale
# spec: shipped:dequantize_int8
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def dequant_kernel(w_ptr, s_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    w = tl.load(w_ptr + row * cols + offs, mask=mask, other=0).to(tl.float32)
    s = tl.load(s_ptr + row).to(tl.float32)
    tl.store(out_ptr + row * cols + offs, (w * s).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        weight = weight.contiguous()
        rows, cols = weight.shape
        out = torch.empty((rows, cols), dtype=scale.dtype, device=weight.device)
        dequant_kernel[(rows, triton.cdiv(cols, 64))](weight, scale, out, cols, BLOCK=64)
        return out
