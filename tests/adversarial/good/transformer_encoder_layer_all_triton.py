# good: KernelBench level-3 style nn.TransformerEncoderLayer (post-norm, ReLU, dropout=0.0, batch_first)
# in training mode, all in Triton over the submodule's own parameters (built with the same seed): the
# packed in_proj by an ieee tl.dot linear kernel, one attention program per (batch, head), out_proj, a
# residual-add + LayerNorm kernel, the ReLU feed-forward with the ReLU fused into linear1, and a second
# residual-add + LayerNorm
# spec: kb_transformer_layer
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


@triton.jit
def add_layernorm_kernel(x_ptr, r_ptr, w_ptr, b_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    v = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0) + tl.load(
        r_ptr + row * N + cols, mask=mask, other=0.0
    )
    mean = tl.sum(v, axis=0) / N
    diff = tl.where(mask, v - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(diff * diff, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * N + cols, diff * rstd * w + b, mask=mask)


def add_layernorm(x2d, r2d, norm):
    M, N = x2d.shape
    y = torch.empty_like(x2d)
    add_layernorm_kernel[(M,)](
        x2d, r2d, norm.weight, norm.bias, y, N, norm.eps, BLOCK=triton.next_power_of_2(N)
    )
    return y


class ModelNew(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=dim_feedforward, dropout=0.0, batch_first=True
        )

    def forward(self, x):
        layer = self.layer
        if layer.norm_first or (self.training and layer.dropout.p != 0.0):
            raise NotImplementedError("post-norm with dropout 0 only")
        B, T, C = x.shape
        attn = layer.self_attn
        x2d = x.reshape(B * T, C).contiguous()
        qkv = linear(x2d, attn.in_proj_weight, attn.in_proj_bias)
        heads = attention(qkv, B, T, attn.num_heads, C)
        h = add_layernorm(x2d, linear(heads, attn.out_proj.weight, attn.out_proj.bias), layer.norm1)
        ff = linear(
            linear(h, layer.linear1.weight, layer.linear1.bias, relu=True),
            layer.linear2.weight,
            layer.linear2.bias,
        )
        return add_layernorm(h, ff, layer.norm2).view(B, T, C)
