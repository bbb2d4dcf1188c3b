# good: argmax over the middle dim of a 3-D input with tl.reduce over a (value, index) pair and a
# @triton.jit combine function that keeps the larger value and, on ties, the smaller index (torch's
# first occurrence); the tile is read through the input's strides, int64 indices out
# spec: kb_argmax_dim
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _argmax_combine(v1, i1, v2, i2):
    take_first = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(take_first, v1, v2), tl.where(take_first, i1, i2)


@triton.jit
def argmax_mid_kernel(
    x_ptr, out_ptr, reduce_len, cols, sb, sr, sc, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr
):
    b = tl.program_id(0)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    r = tl.arange(0, BLOCK_R)
    mask = (r[:, None] < reduce_len) & (c[None, :] < cols)
    vals = tl.load(x_ptr + b * sb + r[:, None] * sr + c[None, :] * sc, mask=mask, other=float("-inf"))
    idx = tl.broadcast_to(r[:, None], (BLOCK_R, BLOCK_C)).to(tl.int64)
    # padded rows carry -inf and an index past every real one, so they never win
    _, best = tl.reduce((vals, idx), 0, _argmax_combine)
    tl.store(out_ptr + b * cols + c, best, mask=c < cols)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or self.dim != 1:
            raise ValueError(f"written for dim 1 of a 3-D input, got dim {self.dim} of {x.dim()}-D")
        batch, length, cols = x.shape
        out = torch.empty((batch, cols), device=x.device, dtype=torch.int64)
        block_c = 16
        grid = (batch, triton.cdiv(cols, block_c))
        argmax_mid_kernel[grid](
            x, out, length, cols, x.stride(0), x.stride(1), x.stride(2),
            BLOCK_R=triton.next_power_of_2(length), BLOCK_C=block_c,
        )  # fmt: skip
        return out
