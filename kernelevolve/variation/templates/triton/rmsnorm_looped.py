# kernelevolve-template: name=rmsnorm_looped family=rmsnorm backend=triton
"""RMSNorm over the last dimension with a learned weight, for rows of any length, in chunks.

One program per row, two passes: accumulate the sum of squares chunk by chunk, then re-read the
row and write x * rsqrt(mean + eps) * weight. Suited to rows too long for registers.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 4096  # tune: 1024, 2048, 4096, 8192
NUM_WARPS = 8  # tune: 2, 4, 8, 16
NUM_STAGES = 2  # tune: 1, 2, 3, 4


@triton.jit
def _rmsnorm_looped_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK_SIZE)
    sq = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        c = start + cols
        x = tl.load(x_ptr + base + c, mask=c < n_cols, other=0.0).to(tl.float32)
        sq += x * x
    inv_rms = tl.rsqrt(tl.sum(sq, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        c = start + cols
        ok = c < n_cols
        x = tl.load(x_ptr + base + c, mask=ok, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=ok, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + c, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        y = torch.empty_like(x)
        if x.numel() == 0:
            return y
        n_rows = x.numel() // n_cols
        block = min(BLOCK_SIZE, triton.next_power_of_2(n_cols))
        _rmsnorm_looped_kernel[(n_rows,)](
            x, self.weight, y, n_cols, self.eps, BLOCK_SIZE=block, num_warps=NUM_WARPS, num_stages=NUM_STAGES
        )
        return y
