# good: causal attention for training in the FlashAttention-2 form: a forward kernel with an online
# softmax over key blocks up to the diagonal that saves the fp32 logsumexp per query row; a backward of
# three kernels (delta = rowsum(dO * O); dK and dV per key block walking the query blocks from the
# diagonal down; dQ per query block walking the key blocks), probabilities recomputed from the saved
# logsumexp; bf16 operands into tl.dot with fp32 accumulation, bf16 outputs; an autograd.Function
# spec: shipped:train_attention
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def attn_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, seq, head_dim, scale,
    BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr,
):  # fmt: skip
    start_m = tl.program_id(0) * BM
    base = tl.program_id(1) * seq * head_dim
    rm = start_m + tl.arange(0, BM)
    rd = tl.arange(0, BD)
    q = tl.load(
        q_ptr + base + rm[:, None] * head_dim + rd[None, :],
        mask=(rm[:, None] < seq) & (rd[None, :] < head_dim),
        other=0.0,
    )
    m_i = tl.full((BM,), float("-inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, BD), tl.float32)
    for start_n in range(0, tl.minimum(start_m + BM, seq), BN):
        rn = start_n + tl.arange(0, BN)
        kv_mask = (rn[:, None] < seq) & (rd[None, :] < head_dim)
        k = tl.load(k_ptr + base + rn[:, None] * head_dim + rd[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + base + rn[:, None] * head_dim + rd[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where((rn[None, :] <= rm[:, None]) & (rn[None, :] < seq), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    o = acc / l_i[:, None]
    out_mask = (rm[:, None] < seq) & (rd[None, :] < head_dim)
    tl.store(o_ptr + base + rm[:, None] * head_dim + rd[None, :], o.to(o_ptr.dtype.element_ty), mask=out_mask)
    tl.store(lse_ptr + tl.program_id(1) * seq + rm, m_i + tl.log(l_i), mask=rm < seq)


@triton.jit
def attn_bwd_delta_kernel(o_ptr, do_ptr, delta_ptr, rows, head_dim, BR: tl.constexpr, BD: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    rd = tl.arange(0, BD)
    mask = (r[:, None] < rows) & (rd[None, :] < head_dim)
    o = tl.load(o_ptr + r[:, None] * head_dim + rd[None, :], mask=mask, other=0.0).to(tl.float32)
    do = tl.load(do_ptr + r[:, None] * head_dim + rd[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(delta_ptr + r, tl.sum(o * do, axis=1), mask=r < rows)


@triton.jit
def attn_bwd_dkdv_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, seq, head_dim, scale,
    BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr,
):  # fmt: skip
    start_n = tl.program_id(0) * BN
    bh = tl.program_id(1)
    base = bh * seq * head_dim
    rn = start_n + tl.arange(0, BN)
    rd = tl.arange(0, BD)
    kv_mask = (rn[:, None] < seq) & (rd[None, :] < head_dim)
    k = tl.load(k_ptr + base + rn[:, None] * head_dim + rd[None, :], mask=kv_mask, other=0.0)
    v = tl.load(v_ptr + base + rn[:, None] * head_dim + rd[None, :], mask=kv_mask, other=0.0)
    dk = tl.zeros((BN, BD), tl.float32)
    dv = tl.zeros((BN, BD), tl.float32)
    for start_m in range(start_n // BM * BM, seq, BM):
        rm = start_m + tl.arange(0, BM)
        q_mask = (rm[:, None] < seq) & (rd[None, :] < head_dim)
        q = tl.load(q_ptr + base + rm[:, None] * head_dim + rd[None, :], mask=q_mask, other=0.0)
        do = tl.load(do_ptr + base + rm[:, None] * head_dim + rd[None, :], mask=q_mask, other=0.0)
        lse = tl.load(lse_ptr + bh * seq + rm, mask=rm < seq, other=0.0)
        delta = tl.load(delta_ptr + bh * seq + rm, mask=rm < seq, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = (rn[None, :] <= rm[:, None]) & (rm[:, None] < seq) & (rn[None, :] < seq)
        p = tl.where(keep, tl.exp(s - lse[:, None]), 0.0)
        dv += tl.dot(tl.trans(p.to(do.dtype)), do)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None]) * scale
        dk += tl.dot(tl.trans(ds.to(q.dtype)), q)
    tl.store(
        dk_ptr + base + rn[:, None] * head_dim + rd[None, :], dk.to(dk_ptr.dtype.element_ty), mask=kv_mask
    )
    tl.store(
        dv_ptr + base + rn[:, None] * head_dim + rd[None, :], dv.to(dv_ptr.dtype.element_ty), mask=kv_mask
    )


@triton.jit
def attn_bwd_dq_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, seq, head_dim, scale,
    BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr,
):  # fmt: skip
    start_m = tl.program_id(0) * BM
    bh = tl.program_id(1)
    base = bh * seq * head_dim
    rm = start_m + tl.arange(0, BM)
    rd = tl.arange(0, BD)
    q_mask = (rm[:, None] < seq) & (rd[None, :] < head_dim)
    q = tl.load(q_ptr + base + rm[:, None] * head_dim + rd[None, :], mask=q_mask, other=0.0)
    do = tl.load(do_ptr + base + rm[:, None] * head_dim + rd[None, :], mask=q_mask, other=0.0)
    lse = tl.load(lse_ptr + bh * seq + rm, mask=rm < seq, other=0.0)
    delta = tl.load(delta_ptr + bh * seq + rm, mask=rm < seq, other=0.0)
    dq = tl.zeros((BM, BD), tl.float32)
    for start_n in range(0, tl.minimum(start_m + BM, seq), BN):
        rn = start_n + tl.arange(0, BN)
        kv_mask = (rn[:, None] < seq) & (rd[None, :] < head_dim)
        k = tl.load(k_ptr + base + rn[:, None] * head_dim + rd[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + base + rn[:, None] * head_dim + rd[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = (rn[None, :] <= rm[:, None]) & (rm[:, None] < seq) & (rn[None, :] < seq)
        p = tl.where(keep, tl.exp(s - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None]) * scale
        dq += tl.dot(ds.to(k.dtype), k)
    tl.store(
        dq_ptr + base + rm[:, None] * head_dim + rd[None, :], dq.to(dq_ptr.dtype.element_ty), mask=q_mask
    )


BM, BN = 16, 16


class _CausalAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        batch, heads, seq, head_dim = q.shape
        scale = 1.0 / math.sqrt(head_dim)
        bd = triton.next_power_of_2(head_dim)
        o = torch.empty_like(q)
        lse = torch.empty((batch * heads, seq), device=q.device, dtype=torch.float32)
        grid = (triton.cdiv(seq, BM), batch * heads)
        attn_fwd_kernel[grid](q, k, v, o, lse, seq, head_dim, scale, BM=BM, BN=BN, BD=bd)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.scale = scale
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        do = do.contiguous()
        batch, heads, seq, head_dim = q.shape
        bd = triton.next_power_of_2(head_dim)
        rows = batch * heads * seq
        delta = torch.empty((batch * heads, seq), device=q.device, dtype=torch.float32)
        attn_bwd_delta_kernel[(triton.cdiv(rows, 16),)](o, do, delta, rows, head_dim, BR=16, BD=bd)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        attn_bwd_dkdv_kernel[(triton.cdiv(seq, BN), batch * heads)](
            q, k, v, do, lse, delta, dk, dv, seq, head_dim, ctx.scale, BM=BM, BN=BN, BD=bd
        )
        attn_bwd_dq_kernel[(triton.cdiv(seq, BM), batch * heads)](
            q, k, v, do, lse, delta, dq, seq, head_dim, ctx.scale, BM=BM, BN=BN, BD=bd
        )
        return dq, dk, dv


class ModelNew(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return _CausalAttention.apply(q, k, v)
