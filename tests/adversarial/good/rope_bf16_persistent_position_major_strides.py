# good: rotary embedding on bf16 queries by persistent programs: a fixed number of programs walk the
# (batch, position) rows with a grid-stride tl.range, each row loading its cos/sin halves once for all
# heads; the queries and the output are read through their transpose(1, 2) views (batch, seq, heads,
# dim), whose strides the kernel takes, so no copy is made; fp32 math rounded once to bf16
# spec: shipped:rope
import torch
import torch.nn as nn
import triton
import triton.language as tl

PERSISTENT_PROGRAMS = 8


@triton.jit
def rope_rows_kernel(
    q_ptr,
    cos_ptr,
    sin_ptr,
    out_ptr,
    n_rows,
    seq_len,
    heads,
    q_sb,
    q_ss,
    q_sh,
    o_sb,
    o_ss,
    o_sh,
    t_ss,
    HALF: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    hs = tl.arange(0, BLOCK_H)
    ds = tl.arange(0, BLOCK_D)
    dmask = ds < HALF
    mask = (hs[:, None] < heads) & dmask[None, :]
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        b = row // seq_len
        s = row % seq_len
        c1 = tl.load(cos_ptr + s * t_ss + ds, mask=dmask, other=0.0).to(tl.float32)
        c2 = tl.load(cos_ptr + s * t_ss + HALF + ds, mask=dmask, other=0.0).to(tl.float32)
        s1 = tl.load(sin_ptr + s * t_ss + ds, mask=dmask, other=0.0).to(tl.float32)
        s2 = tl.load(sin_ptr + s * t_ss + HALF + ds, mask=dmask, other=0.0).to(tl.float32)
        q_row = q_ptr + b * q_sb + s * q_ss + hs[:, None] * q_sh + ds[None, :]
        x1 = tl.load(q_row, mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(q_row + HALF, mask=mask, other=0.0).to(tl.float32)
        o_row = out_ptr + b * o_sb + s * o_ss + hs[:, None] * o_sh + ds[None, :]
        tl.store(o_row, (x1 * c1[None, :] - x2 * s1[None, :]).to(out_ptr.dtype.element_ty), mask=mask)
        tl.store(o_row + HALF, (x2 * c2[None, :] + x1 * s2[None, :]).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        if q.stride(-1) != 1:
            q = q.contiguous()
        cos = cos.contiguous()
        sin = sin.contiguous()
        out = torch.empty_like(q)
        batch, heads, seq_len, head_dim = q.shape
        qt, ot = q.transpose(1, 2), out.transpose(1, 2)  # (batch, seq, heads, dim) views
        n_rows = batch * seq_len
        rope_rows_kernel[(min(n_rows, PERSISTENT_PROGRAMS),)](
            qt,
            cos,
            sin,
            ot,
            n_rows,
            seq_len,
            heads,
            qt.stride(0),
            qt.stride(1),
            qt.stride(2),
            ot.stride(0),
            ot.stride(1),
            ot.stride(2),
            cos.stride(0),
            HALF=head_dim // 2,
            BLOCK_H=triton.next_power_of_2(heads),
            BLOCK_D=triton.next_power_of_2(head_dim // 2),
        )
        return out
