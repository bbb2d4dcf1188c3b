# good: the log-softmax spec with habits from generated code: `@torch.no_grad()` on forward, an early
# return for an empty input, `@triton.autotune` over BLOCK_SIZE / num_warps keyed on n_cols, the grid a
# lambda reading meta (one program per row), an online max / sum-of-exponentials pass then a write pass,
# log-sum-exp with math.log2(e) constants through exp2/log2, dims other than the last moved there
# spec: shipped:log_softmax
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

LOG2E = math.log2(math.e)
LN2 = math.log(2.0)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 64}, num_warps=1),
        triton.Config({"BLOCK_SIZE": 128}, num_warps=2),
        triton.Config({"BLOCK_SIZE": 256}, num_warps=4),
    ],
    key=["n_cols"],
)
@triton.jit
def log_softmax_kernel(x_ptr, out_ptr, n_cols, log2e, ln2, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    o_row = out_ptr + row * n_cols
    offs = tl.arange(0, BLOCK_SIZE)
    m = tl.full((BLOCK_SIZE,), -float("inf"), tl.float32)
    s = tl.zeros((BLOCK_SIZE,), tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        x = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        alpha = tl.where(m_new == -float("inf"), 0.0, tl.exp2((m - m_new) * log2e))
        p = tl.where(x == -float("inf"), 0.0, tl.exp2((x - m_new) * log2e))
        s = s * alpha + p
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp2((m - row_max) * log2e), axis=0)
    lse = row_max + tl.log2(total) * ln2
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + offs < n_cols
        x = tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(o_row + start + offs, x - lse, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    @torch.no_grad()
    def forward(self, x):
        if x.numel() == 0:
            return torch.empty_like(x)
        moved = x.movedim(self.dim, -1).contiguous()
        n_cols = moved.shape[-1]
        n_rows = moved.numel() // n_cols
        out = torch.empty_like(moved)
        log_softmax_kernel[lambda meta: (n_rows,)](moved, out, n_cols, LOG2E, LN2)
        return out.movedim(-1, self.dim)
