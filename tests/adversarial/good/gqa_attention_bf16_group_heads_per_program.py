# good: GQA causal attention (bf16) without repeating K and V: one program per (batch, kv head, query row)
# serving every query head of the group from the same K / V loads (a 2-D block of group heads by head
# dim), scores and softmax in fp32 with exp2 and a log2(e)-folded scale, causal mask by position
# spec: shipped:gqa_attention
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def gqa_row(q_ptr, k_ptr, v_ptr, o_ptr, H, KVH, S, D, qk_scale,
            G: tl.constexpr, BS: tl.constexpr, BD: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    i = pid % S
    kvh = (pid // S) % KVH
    b = pid // (S * KVH)
    g = tl.arange(0, G)
    d = tl.arange(0, BD)
    heads = kvh * G + g
    q_off = ((b * H + heads[:, None]) * S + i) * D + d[None, :]
    q = tl.load(q_ptr + q_off, mask=d[None, :] < D, other=0.0).to(tl.float32)
    j = tl.arange(0, BS)
    kv_off = ((b * KVH + kvh) * S + j[:, None]) * D + d[None, :]
    kv_mask = (j[:, None] <= i) & (d[None, :] < D)
    k = tl.load(k_ptr + kv_off, mask=kv_mask, other=0.0).to(tl.float32)
    v = tl.load(v_ptr + kv_off, mask=kv_mask, other=0.0).to(tl.float32)
    scores = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * qk_scale
    scores = tl.where(j[None, :] <= i, scores, -float("inf"))
    p = tl.exp2(scores - tl.max(scores, axis=1)[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    out = tl.sum(p[:, :, None] * v[None, :, :], axis=1)
    tl.store(o_ptr + q_off, out.to(o_ptr.dtype.element_ty), mask=d[None, :] < D)


class ModelNew(nn.Module):
    def forward(self, q, k, v):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        b, h, s, d = q.shape
        kvh = k.shape[1]
        out = torch.empty_like(q)
        scale = LOG2E / math.sqrt(d)
        gqa_row[(b * kvh * s,)](
            q,
            k,
            v,
            out,
            h,
            kvh,
            s,
            d,
            scale,
            G=h // kvh,
            BS=triton.next_power_of_2(s),
            BD=triton.next_power_of_2(d),
        )
        return out
