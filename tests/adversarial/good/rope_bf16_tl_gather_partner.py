# good: RoPE with the whole head row loaded once and rotate_half built in registers by tl.gather of each
# element's partner (index (d + half) % head_dim, negated in the first half), fp32 math, bf16 out; the
# cos/sin tables are read through their own strides (they broadcast over batch and heads)
# spec: shipped:rope
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rope_gather_kernel(
    q_ptr, cos_ptr, sin_ptr, out_ptr, seq, head_dim, s_cos, s_sin,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    bh = tl.program_id(0)
    s = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    d = tl.arange(0, BLOCK_D)
    half = head_dim // 2
    mask = (s[:, None] < seq) & (d[None, :] < head_dim)
    row = (bh * seq + s[:, None]) * head_dim
    h = tl.load(q_ptr + row + d[None, :], mask=mask, other=0.0).to(tl.float32)
    partner = tl.where(d < head_dim, (d + half) % head_dim, d)
    rotated = tl.gather(h, tl.broadcast_to(partner[None, :], (BLOCK_S, BLOCK_D)), 1)
    rotated = tl.where(d[None, :] < half, -rotated, rotated)
    c = tl.load(cos_ptr + s[:, None] * s_cos + d[None, :], mask=mask, other=0.0).to(tl.float32)
    sn = tl.load(sin_ptr + s[:, None] * s_sin + d[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row + d[None, :], (h * c + rotated * sn).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        q = q.contiguous()
        batch, heads, seq, head_dim = q.shape
        if head_dim % 2:
            raise ValueError(f"head_dim must be even, got {head_dim}")
        cos2 = cos.reshape(seq, head_dim)
        sin2 = sin.reshape(seq, head_dim)
        if cos2.stride(1) != 1 or sin2.stride(1) != 1:
            cos2, sin2 = cos2.contiguous(), sin2.contiguous()
        out = torch.empty_like(q)
        block_s = 8
        grid = (batch * heads, triton.cdiv(seq, block_s))
        rope_gather_kernel[grid](
            q, cos2, sin2, out, seq, head_dim, cos2.stride(0), sin2.stride(0),
            BLOCK_S=block_s, BLOCK_D=triton.next_power_of_2(head_dim),
        )  # fmt: skip
        return out
