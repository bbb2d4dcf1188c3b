# good: causal softmax over (batch, heads, seq, seq) fp16 scores on a 3-D grid (row block, head, batch:
# tl.program_id(2) is the batch), the base offset widened with .to(tl.int64) before the multiply (the
# full-size scores pass 2**31 elements), fp32 max/sum, the masked future written as exact zeros, fp16 out
# spec: shipped:causal_softmax
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, y_ptr, heads, seq, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    head = tl.program_id(1)
    batch = tl.program_id(2)
    plane = (batch.to(tl.int64) * heads + head) * seq * seq
    cols = tl.arange(0, BLOCK_C)
    inb = (rows[:, None] < seq) & (cols[None, :] < seq)
    visible = inb & (cols[None, :] <= rows[:, None])
    offs = plane + rows[:, None].to(tl.int64) * seq + cols[None, :]
    x = tl.load(x_ptr + offs, mask=visible, other=float("-inf")).to(tl.float32)
    row_max = tl.max(x, axis=1)
    row_max = tl.where(rows < seq, row_max, 0.0)  # padded rows: keep them finite
    e = tl.where(visible, tl.exp(x - row_max[:, None]), 0.0)
    denom = tl.sum(e, axis=1)
    denom = tl.where(denom > 0, denom, 1.0)
    tl.store(y_ptr + offs, (e / denom[:, None]).to(y_ptr.dtype.element_ty), mask=inb)


class ModelNew(nn.Module):
    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        scores = scores.contiguous()
        batch, heads, seq, seq2 = scores.shape
        if seq != seq2:
            raise ValueError(f"causal softmax needs square scores, got {seq}x{seq2}")
        out = torch.empty_like(scores)
        block_c = triton.next_power_of_2(seq)
        block_r = max(1, min(16, 4096 // block_c))
        grid = (triton.cdiv(seq, block_r), heads, batch)
        causal_softmax_kernel[grid](scores, out, heads, seq, BLOCK_R=block_r, BLOCK_C=block_c)
        return out
