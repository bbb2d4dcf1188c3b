# good: rotary embedding (rotate-half) on bf16 queries of shape (batch, heads, seq, head_dim): one program
# per (batch * head, position), the query's four strides passed so any layout works, fp32 cos/sin tables
# broadcast over batch and heads, the rotation done in fp32 and rounded once
# spec: shipped:rope
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rope_kernel(
    q_ptr,
    cos_ptr,
    sin_ptr,
    out_ptr,
    heads,
    sqb,
    sqh,
    sqs,
    sqd,
    sts,
    HALF: tl.constexpr,
    BLOCK: tl.constexpr,
):
    bh = tl.program_id(0)
    pos = tl.program_id(1)
    b = bh // heads
    h = bh % heads
    d = tl.arange(0, BLOCK)
    mask = d < HALF
    base = q_ptr + b * sqb + h * sqh + pos * sqs
    lo = tl.load(base + d * sqd, mask=mask, other=0.0).to(tl.float32)
    hi = tl.load(base + (d + HALF) * sqd, mask=mask, other=0.0).to(tl.float32)
    c_lo = tl.load(cos_ptr + pos * sts + d, mask=mask, other=0.0)
    c_hi = tl.load(cos_ptr + pos * sts + d + HALF, mask=mask, other=0.0)
    s_lo = tl.load(sin_ptr + pos * sts + d, mask=mask, other=0.0)
    s_hi = tl.load(sin_ptr + pos * sts + d + HALF, mask=mask, other=0.0)
    out = out_ptr + (bh * tl.num_programs(1) + pos) * (2 * HALF)
    tl.store(out + d, (lo * c_lo - hi * s_lo).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out + d + HALF, (hi * c_hi + lo * s_hi).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, heads, seq, dim = q.shape
        cos = cos.float().contiguous()
        sin = sin.float().contiguous()
        out = torch.empty((batch, heads, seq, dim), dtype=q.dtype, device=q.device)
        half = dim // 2
        rope_kernel[(batch * heads, seq)](
            q,
            cos,
            sin,
            out,
            heads,
            *q.stride(),
            cos.stride(0),
            HALF=half,
            BLOCK=triton.next_power_of_2(half),
        )
        return out
