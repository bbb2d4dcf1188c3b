# good: KernelBench level-3 minGPT causal self-attention in training mode (both dropouts at p=0.0, the
# identity), all in Triton: the c_attn and c_proj linears by an ieee tl.dot kernel over the module's own
# parameters (same seed, same init as the reference), and one attention program per (batch, head) reading
# q, k, v as column slices of the packed projection and the causal mask from the module's registered
# `bias` buffer (the tril of ones), writing heads merged by layout
# spec: kb_mingpt_causal_attention
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
    RELU: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    # y[M, N] = x[M, K] @ w[N, K]^T + b, ReLU optional; ieee dots (no TF32)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(
            x_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + ks[:, None], mask=(rn[None, :] < N) & (ks[:, None] < K), other=0.0
        )
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def attention_kernel(
    qkv_ptr, mask_ptr, o_ptr, T, n_head, d_model, head_dim, mask_stride, scale,
    HAS_MASK: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr,
):  # fmt: skip
    # one program per (batch, head): q, k, v are column slices of the packed (B*T, 3*d_model) projection;
    # the output goes to the head's columns of a (B*T, d_model) buffer (heads merged by layout)
    b = tl.program_id(0)
    h = tl.program_id(1)
    t = tl.arange(0, BT)
    d = tl.arange(0, BD)
    rows = b * T + t
    io_mask = (t[:, None] < T) & (d[None, :] < head_dim)
    base = qkv_ptr + rows[:, None] * (3 * d_model) + h * head_dim + d[None, :]
    q = tl.load(base, mask=io_mask, other=0.0)
    k = tl.load(base + d_model, mask=io_mask, other=0.0)
    v = tl.load(base + 2 * d_model, mask=io_mask, other=0.0)
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
    keep = (t[:, None] < BT) & (t[None, :] < T)
    if HAS_MASK:
        allowed = tl.load(mask_ptr + t[:, None] * mask_stride + t[None, :], mask=keep, other=0.0)
        keep = keep & (allowed != 0)
    s = tl.where(keep, s, float("-inf"))
    p = tl.exp(s - tl.max(s, axis=1)[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    o = tl.dot(p, v, input_precision="ieee")
    tl.store(o_ptr + rows[:, None] * d_model + h * head_dim + d[None, :], o, mask=io_mask)


def linear(x2d, weight, bias, relu=False):
    M, K = x2d.shape
    N = weight.shape[0]
    y = torch.empty(M, N, device=x2d.device, dtype=x2d.dtype)
    linear_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](
        x2d, weight.contiguous(), bias, y, M, N, K, RELU=relu, BM=16, BN=16, BK=16
    )
    return y


def attention(qkv, batch, seq, n_head, d_model, mask=None):
    head_dim = d_model // n_head
    out = torch.empty(batch * seq, d_model, device=qkv.device, dtype=qkv.dtype)
    attention_kernel[(batch, n_head)](
        qkv, qkv if mask is None else mask, out, seq, n_head, d_model, head_dim,
        0 if mask is None else mask.stride(-2), 1.0 / math.sqrt(head_dim),
        HAS_MASK=mask is not None, BT=max(16, triton.next_power_of_2(seq)),
        BD=max(16, triton.next_power_of_2(head_dim)),
    )  # fmt: skip
    return out


class ModelNew(nn.Module):
    def __init__(self, n_embd, n_head, max_seqlen):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(0.0)
        self.resid_dropout = nn.Dropout(0.0)
        self.register_buffer(
            "bias", torch.tril(torch.ones(max_seqlen, max_seqlen)).view(1, 1, max_seqlen, max_seqlen)
        )
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        if self.training and (self.attn_dropout.p or self.resid_dropout.p):
            raise NotImplementedError("dropout is fused only at p=0")
        B, T, C = x.shape
        qkv = linear(x.reshape(B * T, C).contiguous(), self.c_attn.weight, self.c_attn.bias)
        mask = self.bias[0, 0, :T, :T]
        y = attention(qkv, B, T, self.n_head, C, mask)
        return linear(y, self.c_proj.weight, self.c_proj.bias).view(B, T, C)
