# good: tanh-approximate GELU times a scale on fp16, FlashAttention's decorator stack: @triton.autotune
# (three BLOCK configs, key on n) over @triton.heuristics (an EVEN flag from the chosen BLOCK) over
# @triton.jit; the math in fp32 (tanh by exp), stored back to fp16 by the output pointer's dtype
# spec: kb_half_gelu_scale
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=2),
        triton.Config({"BLOCK": 512}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
    ],
    key=["n"],
)
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def gelu_tanh_scale(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs).to(tl.float32)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    t = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
    y = 0.5 * x * (1.0 + t) * scale
    if EVEN:
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty))
    else:
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        gelu_tanh_scale[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n, self.scale)
        return y
