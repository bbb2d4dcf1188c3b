# good: fp16 softmax computed in place on a fresh output: `out = torch.empty_like(x)`, `out.copy_(x)`, then
# one kernel reads and overwrites each row of `out` (online max/sum in fp32 over column chunks)
# spec: kb_half_softmax
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_inplace(y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = y_ptr + row * n_cols
    m = tl.full((), float("-inf"), tl.float32)
    s = tl.zeros((), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        tl.store(base + cols, (tl.exp(x - m) / s).to(tl.float16), mask=cols < n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
        out.copy_(x)
        softmax_inplace[(out.shape[0],)](out, out.shape[1], BLOCK=32)
        return out
