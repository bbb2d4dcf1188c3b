# kernelevolve-template: name=layernorm_looped family=layernorm backend=triton
"""nn.LayerNorm over the trailing normalized_shape for rows of any length, in fixed-size chunks.

One program per row, two passes: per-lane Welford mean / M2 over the chunks (merged across lanes
at the end, numerically stable), then normalise, scale and shift. Suited to long rows
(KernelBench 40_LayerNorm normalises 4M elements per row).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 4096  # tune: 1024, 2048, 4096, 8192
NUM_WARPS = 8  # tune: 2, 4, 8, 16
NUM_STAGES = 2  # tune: 1, 2, 3, 4


@triton.jit
def _layernorm_looped_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK_SIZE)
    # A lane valid in chunk k was valid in every earlier chunk, so all lanes updated in chunk k
    # have seen k + 1 values and share one reciprocal.
    mean = tl.zeros([BLOCK_SIZE], tl.float32)
    m2 = tl.zeros([BLOCK_SIZE], tl.float32)
    seen = tl.full([], 0.0, tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        c = start + cols
        ok = c < n_cols
        x = tl.load(x_ptr + base + c, mask=ok, other=0.0).to(tl.float32)
        seen += 1.0
        inv_seen = 1.0 / seen
        delta = x - mean
        mean += tl.where(ok, delta * inv_seen, 0.0)
        m2 += tl.where(ok, delta * (x - mean), 0.0)
    # Merge the lanes (Chan et al. parallel variance).
    count = tl.maximum((n_cols - cols + BLOCK_SIZE - 1) // BLOCK_SIZE, 0).to(tl.float32)
    row_mean = tl.sum(count * mean, axis=0) / n_cols
    spread = mean - row_mean
    var = tl.sum(m2 + count * spread * spread, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        c = start + cols
        ok = c < n_cols
        x = tl.load(x_ptr + base + c, mask=ok, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=ok, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=ok, other=0.0).to(tl.float32)
        y = (x - row_mean) * rstd * w + b
        tl.store(y_ptr + base + c, y.to(y_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = math.prod(self.ln.normalized_shape)
        y = torch.empty_like(x)
        if x.numel() == 0:
            return y
        n_rows = x.numel() // n_cols
        block = min(BLOCK_SIZE, triton.next_power_of_2(n_cols))
        _layernorm_looped_kernel[(n_rows,)](
            x,
            self.ln.weight,
            self.ln.bias,
            y,
            n_cols,
            self.ln.eps,
            BLOCK_SIZE=block,
            num_warps=NUM_WARPS,
            num_stages=NUM_STAGES,
        )
        return y
