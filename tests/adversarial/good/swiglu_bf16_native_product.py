# good: SwiGLU in bf16 with the product in bf16 itself: silu computed in fp32 and rounded to bf16 (as
# PyTorch's F.silu on bf16 does), then multiplied by the bf16 up half without an upcast, as many
# hand-written kernels do (on a GPU a bf16 product is rounded once from the exact product)
# spec: shipped:swiglu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swiglu_kernel(x_ptr, out_ptr, n_rows, hidden, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_rows * hidden
    row = offs // hidden
    col = offs % hidden
    gate = tl.load(x_ptr + row * 2 * hidden + col, mask=mask, other=0.0)
    up = tl.load(x_ptr + row * 2 * hidden + hidden + col, mask=mask, other=0.0)
    g = gate.to(tl.float32)
    silu = (g * tl.sigmoid(g)).to(tl.bfloat16)
    tl.store(out_ptr + offs, silu * up, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        hidden = x.shape[-1] // 2
        rows = x.numel() // x.shape[-1]
        out = torch.empty((*x.shape[:-1], hidden), dtype=x.dtype, device=x.device)
        swiglu_kernel[(triton.cdiv(rows * hidden, 128),)](x, out, rows, hidden, BLOCK=128)
        return out
