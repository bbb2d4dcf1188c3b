# good: SwiGLU silu(gate) * up in bf16 over the two halves of the last dimension without a chunk copy: a
# 2-D grid of (token, column block), the odd hidden size masked, silu in fp32 (sigmoid by tl.exp), rounded
# once; any leading shape kept through reshape and the output's view
# spec: shipped:swiglu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swiglu_kernel(x_ptr, out_ptr, hidden, stride_x, stride_o, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < hidden
    gate = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * stride_x + hidden + cols, mask=mask, other=0.0).to(tl.float32)
    silu = gate / (1.0 + tl.exp(-gate))
    # the reference rounds silu(gate) to bf16 before the product
    silu = silu.to(out_ptr.dtype.element_ty).to(tl.float32)
    tl.store(out_ptr + row * stride_o + cols, (silu * up).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    BLOCK = 64

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        *lead, width = x.shape
        hidden = width // 2
        x2 = x.reshape(-1, width)
        out = torch.empty((x2.shape[0], hidden), dtype=x.dtype, device=x.device)
        grid = (x2.shape[0], triton.cdiv(hidden, self.BLOCK))
        swiglu_kernel[grid](x2, out, hidden, x2.stride(0), out.stride(0), BLOCK=self.BLOCK)
        return out.view(*lead, hidden)
