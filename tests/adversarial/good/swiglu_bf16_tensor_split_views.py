# good: SwiGLU with gate and up as views from x.tensor_split(2, dim=-1) (no copy; each view's pointer and
# row stride go to the kernel), silu(gate) * up in fp32, bf16 out, a 2-D grid of row and column blocks
# spec: shipped:swiglu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swiglu_kernel(
    gate_ptr, up_ptr, out_ptr, rows, hidden, s_gate, s_up, BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr
):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = (r[:, None] < rows) & (h[None, :] < hidden)
    g = tl.load(gate_ptr + r[:, None] * s_gate + h[None, :], mask=mask, other=0.0).to(tl.float32)
    u = tl.load(up_ptr + r[:, None] * s_up + h[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(
        out_ptr + r[:, None] * hidden + h[None, :],
        (g * tl.sigmoid(g) * u).to(out_ptr.dtype.element_ty),
        mask=mask,
    )


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1])
        if x2.stride(-1) != 1:
            x2 = x2.contiguous()
        gate, up = x2.tensor_split(2, dim=-1)
        rows, hidden = gate.shape
        out = torch.empty((rows, hidden), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(rows, 4), triton.cdiv(hidden, 32))
        swiglu_kernel[grid](gate, up, out, rows, hidden, gate.stride(0), up.stride(0), BLOCK_R=4, BLOCK_H=32)
        return out.reshape(*x.shape[:-1], hidden)
