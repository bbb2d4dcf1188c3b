# good: the simpler guard: `ctx = torch.cuda.device(x.device.index) if x.is_cuda else nullcontext()`, then
# `with ctx:` around the launch; fp16 softmax rows in fp32 (exp2 with a log2(e) factor)
# spec: kb_half_softmax
from contextlib import nullcontext

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows_exp2(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
    e = tl.exp2((x - tl.max(x, axis=0)) * 1.4426950408889634)
    tl.store(y_ptr + row * n_cols + cols, (e / tl.sum(e, axis=0)).to(tl.float16), mask=cols < n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        ctx = torch.cuda.device(x.device.index) if x.is_cuda else nullcontext()
        with ctx:
            softmax_rows_exp2[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
