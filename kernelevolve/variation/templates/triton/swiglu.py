# kernelevolve-template: name=swiglu family=swiglu backend=triton
"""SwiGLU gate: x = [gate | up] along the last dim, out = silu(gate) * up, in one pass.

Program (row, column block) loads the matching gate and up slices of one row (two coalesced
reads), computes in fp32 and writes one output slice; a 2-D grid avoids per-element division
to find the row. Any hidden size works (masked tail).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 1024  # tune: 256, 512, 1024, 2048, 4096
NUM_WARPS = 4  # tune: 1, 2, 4, 8


@triton.jit
def _swiglu_kernel(x_ptr, out_ptr, hidden, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    ok = cols < hidden
    src = x_ptr + row * 2 * hidden + cols
    gate = tl.load(src, mask=ok, other=0.0).to(tl.float32)
    up = tl.load(src + hidden, mask=ok, other=0.0).to(tl.float32)
    out = gate * tl.sigmoid(gate) * up
    tl.store(out_ptr + row * hidden + cols, out.to(out_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        hidden = x.shape[-1] // 2
        out = torch.empty((*x.shape[:-1], hidden), dtype=x.dtype, device=x.device)
        if out.numel() == 0:
            return out
        rows = out.numel() // hidden
        block = min(BLOCK_SIZE, triton.next_power_of_2(hidden))
        _swiglu_kernel[(rows, triton.cdiv(hidden, block))](
            x, out, hidden, BLOCK_SIZE=block, num_warps=NUM_WARPS
        )
        return out
