# good: the shipped row softmax (KernelBench 23 form) for rows longer than one block: one program per row,
# a first pass over column blocks keeping the running maximum and the rescaled running sum (online
# softmax), a second pass writing exp(x - m) / s; exp2 with log2(e) folded in
# spec: shipped:softmax
import torch
import torch.nn as nn
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def online_softmax(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    m = tl.full((), -float("inf"), tl.float32)
    s = tl.zeros((), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32) * LOG2E
        new_m = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp2(m - new_m) + tl.sum(tl.exp2(x - new_m), axis=0)
        m = new_m
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32) * LOG2E
        tl.store(y_ptr + row * stride + cols, tl.exp2(x - m) / s, mask=cols < n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty_like(x)
        online_softmax[(rows,)](x, y, cols, x.stride(0), BLOCK=min(1024, triton.next_power_of_2(cols)))
        return y
