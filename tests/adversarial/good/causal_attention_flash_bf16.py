# good: causal flash attention in bf16: one program per (query block, batch * head), an online softmax
# over key blocks up to the diagonal (a loop to a runtime bound), bf16 tl.dot with fp32 accumulation,
# exp2 with the scale folded in log2 units, the partial last block masked, rounded once at the store
# spec: shipped:causal_attention
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def flash_fwd(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq,
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    base = tl.program_id(1).to(tl.int64) * seq * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < seq, other=0.0
    )
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    hi = tl.minimum(start_m + BLOCK_M, seq)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < seq
        k = tl.load(k_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        causal = (offs_m[:, None] >= offs_n[None, :]) & (offs_n[None, :] < seq)
        s = tl.where(causal, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(
        o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
        out.to(o_ptr.dtype.element_ty),
        mask=offs_m[:, None] < seq,
    )


class ModelNew(nn.Module):
    BLOCK_M = 16
    BLOCK_N = 16

    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        batch, heads, seq, dim = q.shape
        out = torch.empty_like(q)
        qk_scale = 1.0 / math.sqrt(dim) * 1.4426950408889634  # log2(e): exp2 in the kernel
        grid = (triton.cdiv(seq, self.BLOCK_M), batch * heads)
        flash_fwd[grid](q, k, v, out, seq, qk_scale, HEAD_DIM=dim, BLOCK_M=self.BLOCK_M, BLOCK_N=self.BLOCK_N)
        return out
