# kernelevolve-template: name=elementwise_chain family=elementwise_chain backend=triton
"""gelu(x * scale + bias) * sigmoid(x) (exact erf GELU) fused into one pass over memory.

The chain is pointwise with per-feature scale and bias along the last dim, so each element is
read once and written once; the two small parameter vectors stay in L1/L2. Program (row block,
column block) of a 2-D grid reads a BLOCK_ROWS x BLOCK_COLS tile, so no per-element division is
needed to find the feature index.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_ROWS = 4  # tune: 1, 2, 4, 8, 16
BLOCK_COLS = 1024  # tune: 256, 512, 1024, 2048
NUM_WARPS = 8  # tune: 2, 4, 8, 16


@triton.jit
def _chain_kernel(
    x_ptr, scale_ptr, bias_ptr, out_ptr, n_rows, dim, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr
):
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.program_id(1) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    col_ok = cols < dim
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    offs = rows.to(tl.int64)[:, None] * dim + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    scale = tl.load(scale_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    bias = tl.load(bias_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    z = x * scale[None, :] + bias[None, :]
    gelu = 0.5 * z * (1.0 + tl.erf(z * 0.7071067811865476))
    tl.store(out_ptr + offs, (gelu * tl.sigmoid(x)).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        if x.numel() == 0:
            return out
        dim = x.shape[-1]
        n_rows = x.numel() // dim
        block_cols = min(BLOCK_COLS, triton.next_power_of_2(dim))
        grid = (triton.cdiv(n_rows, BLOCK_ROWS), triton.cdiv(dim, block_cols))
        _chain_kernel[grid](
            x,
            self.scale,
            self.bias,
            out,
            n_rows,
            dim,
            BLOCK_ROWS=BLOCK_ROWS,
            BLOCK_COLS=block_cols,
            num_warps=NUM_WARPS,
        )
        return out
