# good: MoE dispatch gather in bf16 into a column-major output made with torch.empty_strided (a
# non-contiguous result of the reference's shape and values); one program per (output row block, hidden
# block) loads the int64 routing order and copies the rows, both strides of the output passed
# spec: shipped:moe_gather
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gather_kernel(
    x_ptr, order_ptr, out_ptr, rows, hidden, so_r, so_c, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr
):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    rmask = r < rows
    src = tl.load(order_ptr + r, mask=rmask, other=0)
    mask = rmask[:, None] & (c[None, :] < hidden)
    v = tl.load(x_ptr + src[:, None] * hidden + c[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + r[:, None] * so_r + c[None, :] * so_c, v, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows = order.numel()
        hidden = x.shape[1]
        out = torch.empty_strided((rows, hidden), (1, rows), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(rows, 16), triton.cdiv(hidden, 64))
        gather_kernel[grid](x, order, out, rows, hidden, out.stride(0), out.stride(1), BLOCK_R=16, BLOCK_C=64)
        return out
