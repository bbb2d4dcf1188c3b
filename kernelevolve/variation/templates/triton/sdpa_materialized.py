# kernelevolve-template: name=sdpa_materialized family=sdpa backend=triton seed_precisions=tf32
"""scaled_dot_product_attention(q, k, v) without mask or dropout, for any head_dim: scores in memory.

A flash kernel keeps a (BLOCK_M x head_dim) accumulator and q tile per program, which does not fit at
large head dims (KernelBench 97: fp32, head_dim 1024). Here two GEMM-shaped kernels share an fp32
score workspace instead:
  1. S = q k^T * scale * log2(e), tiled over (query, key) with a loop over head_dim; each tile also
     writes, per row, its maximum and sum of exp2(S - maximum), so no separate softmax pass is needed.
  2. O = exp2(S - m) v / l, tiled over (query, head_dim of v): each program merges the per-tile
     statistics into the row maximum m and normaliser l, then streams S and v over the keys.
Batch-heads go in chunks so that the workspace holds at most SCORES_PER_LAUNCH scores. Any sequence
lengths (q's and k/v's may differ), head dims (v's may differ from q's), strides and leading dims
work; `scale` defaults to 1/sqrt(head_dim), as in PyTorch. fp32 inputs use FP32_PRECISION for tl.dot.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

S_BLOCK_M = 128  # tune: 64, 128
S_BLOCK_N = 128  # tune: 64, 128
S_BLOCK_K = 32  # tune: 16, 32, 64
S_WARPS = 8  # tune: 4, 8
S_STAGES = 3  # tune: 2, 3, 4
O_BLOCK_M = 128  # tune: 64, 128
O_BLOCK_N = 32  # tune: 16, 32, 64
O_BLOCK_D = 128  # tune: 64, 128, 256
O_WARPS = 8  # tune: 4, 8
O_STAGES = 3  # tune: 2, 3, 4
# tf32 is a third of tf32x3's tensor-core work; on KernelBench 97's rand inputs an emulation put its
# error at about a quarter of the 1e-4 tolerance, but the harness decides per problem.
FP32_PRECISION = "tf32x3"  # tune: "tf32x3", "ieee", "tf32"
# Workspace bound (fp32 scores per launch pair); KernelBench 97's 1024 x 512 x 512 is one chunk.
SCORES_PER_LAUNCH = 268435456  # tune: 16777216, 268435456
MAX_GRID_Z = 65535  # CUDA's limit on the batch-head grid axis


@triton.jit
def _sdpa_scores_kernel(
    q_ptr,
    k_ptr,
    s_ptr,
    max_ptr,
    sum_ptr,
    stride_qz,
    stride_qh,
    stride_qm,
    stride_qd,
    stride_kz,
    stride_kh,
    stride_kn,
    stride_kd,
    bh_start,
    num_heads,
    seq_q,
    seq_k,
    head_dim,
    n_tiles,
    qk_scale,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
    PRECISION: tl.constexpr,
):
    pid = tl.program_id(0)
    pid_m = pid // n_tiles
    pid_n = pid % n_tiles
    local = tl.program_id(1).to(tl.int64)
    bh = bh_start + local
    z = bh // num_heads
    h = bh % num_heads

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < seq_q
    n_ok = offs_n < seq_k
    q_ptrs = q_ptr + z * stride_qz + h * stride_qh + offs_m[:, None] * stride_qm + offs_k[None, :] * stride_qd
    k_ptrs = k_ptr + z * stride_kz + h * stride_kh + offs_k[:, None] * stride_kd + offs_n[None, :] * stride_kn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, head_dim, BLOCK_K):
        # Row/column masks are constant along head_dim (vector loads stay); a head_dim tail is not.
        if EVEN_K:
            q = tl.load(q_ptrs, mask=m_ok[:, None], other=0.0)
            k = tl.load(k_ptrs, mask=n_ok[None, :], other=0.0)
        else:
            k_left = head_dim - start
            q = tl.load(q_ptrs, mask=m_ok[:, None] & (offs_k[None, :] < k_left), other=0.0)
            k = tl.load(k_ptrs, mask=n_ok[None, :] & (offs_k[:, None] < k_left), other=0.0)
        acc = tl.dot(q, k, acc, input_precision=PRECISION)
        q_ptrs += BLOCK_K * stride_qd
        k_ptrs += BLOCK_K * stride_kd

    # Scores in the exp2 domain; keys past seq_k are -inf so they add nothing to the statistics.
    s = tl.where(n_ok[None, :], acc * qk_scale, float("-inf"))
    tile_max = tl.max(s, axis=1)
    tile_sum = tl.sum(tl.exp2(s - tile_max[:, None]), axis=1)
    rows = local * seq_q + offs_m
    tl.store(s_ptr + rows[:, None] * seq_k + offs_n[None, :], s, mask=m_ok[:, None] & n_ok[None, :])
    tl.store(max_ptr + rows * n_tiles + pid_n, tile_max, mask=m_ok)
    tl.store(sum_ptr + rows * n_tiles + pid_n, tile_sum, mask=m_ok)


@triton.jit
def _sdpa_output_kernel(
    s_ptr,
    max_ptr,
    sum_ptr,
    v_ptr,
    o_ptr,
    stride_vz,
    stride_vh,
    stride_vn,
    stride_vd,
    stride_oz,
    stride_oh,
    stride_om,
    stride_od,
    bh_start,
    num_heads,
    seq_q,
    seq_k,
    head_dim_v,
    n_tiles,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    EVEN_N: tl.constexpr,
    PRECISION: tl.constexpr,
):
    # head_dim blocks vary fastest, so the programs reading one block of score rows run together.
    pid_d = tl.program_id(0)
    pid_m = tl.program_id(1)
    local = tl.program_id(2).to(tl.int64)
    bh = bh_start + local
    z = bh // num_heads
    h = bh % num_heads

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    offs_n = tl.arange(0, BLOCK_N)
    m_ok = offs_m < seq_q
    d_ok = offs_d < head_dim_v
    rows = local * seq_q + offs_m

    # Merge the per-tile (maximum, sum) pairs into each row's maximum and softmax normaliser.
    row_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for t in range(0, n_tiles):
        t_max = tl.load(max_ptr + rows * n_tiles + t, mask=m_ok, other=0.0)
        t_sum = tl.load(sum_ptr + rows * n_tiles + t, mask=m_ok, other=1.0)
        new_max = tl.maximum(row_max, t_max)
        row_sum = row_sum * tl.exp2(row_max - new_max) + t_sum * tl.exp2(t_max - new_max)
        row_max = new_max

    s_ptrs = s_ptr + rows[:, None] * seq_k + offs_n[None, :]
    v_ptrs = v_ptr + z * stride_vz + h * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for start in range(0, seq_k, BLOCK_N):
        if EVEN_N:
            s = tl.load(s_ptrs, mask=m_ok[:, None], other=float("-inf"))
            v = tl.load(v_ptrs, mask=d_ok[None, :], other=0.0)
        else:
            n_ok = offs_n < seq_k - start
            s = tl.load(s_ptrs, mask=m_ok[:, None] & n_ok[None, :], other=float("-inf"))
            v = tl.load(v_ptrs, mask=n_ok[:, None] & d_ok[None, :], other=0.0)
        p = tl.exp2(s - row_max[:, None])
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=PRECISION)
        s_ptrs += BLOCK_N
        v_ptrs += BLOCK_N * stride_vn

    out = acc / row_sum[:, None]
    o_ptrs = o_ptr + z * stride_oz + h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=m_ok[:, None] & d_ok[None, :])


def _as_4d(x: torch.Tensor) -> torch.Tensor:
    """(..., seq, dim) as (batch, heads, seq, dim): a view unless >4-D strides cannot merge."""
    while x.dim() < 4:
        x = x.unsqueeze(0)
    return x.flatten(0, x.dim() - 4) if x.dim() > 4 else x


class ModelNew(nn.Module):
    def __init__(self, scale: float | None = None):
        super().__init__()
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out = torch.empty((*q.shape[:-1], v.shape[-1]), dtype=q.dtype, device=q.device)
        if out.numel() == 0:
            return out
        q4, k4, v4, o4 = _as_4d(q), _as_4d(k), _as_4d(v), _as_4d(out)
        batch, heads, seq_q, head_dim = q4.shape
        seq_k, head_dim_v = k4.shape[2], v4.shape[3]
        scale = 1.0 / math.sqrt(head_dim) if self.scale is None else self.scale
        qk_scale = scale * 1.4426950408889634  # log2(e): softmax via exp2
        n_tiles = triton.cdiv(seq_k, S_BLOCK_N)
        bh_total = batch * heads
        chunk = max(1, min(bh_total, MAX_GRID_Z, SCORES_PER_LAUNCH // max(1, seq_q * seq_k)))
        scores = torch.empty((chunk, seq_q, seq_k), dtype=torch.float32, device=q.device)
        tile_max = torch.empty((chunk, seq_q, n_tiles), dtype=torch.float32, device=q.device)
        tile_sum = torch.empty((chunk, seq_q, n_tiles), dtype=torch.float32, device=q.device)
        for bh_start in range(0, bh_total, chunk):
            count = min(chunk, bh_total - bh_start)
            _sdpa_scores_kernel[(triton.cdiv(seq_q, S_BLOCK_M) * n_tiles, count)](
                q4,
                k4,
                scores,
                tile_max,
                tile_sum,
                *q4.stride(),
                *k4.stride(),
                bh_start,
                heads,
                seq_q,
                seq_k,
                head_dim,
                n_tiles,
                qk_scale,
                BLOCK_M=S_BLOCK_M,
                BLOCK_N=S_BLOCK_N,
                BLOCK_K=S_BLOCK_K,
                EVEN_K=head_dim % S_BLOCK_K == 0,
                PRECISION=FP32_PRECISION,
                num_warps=S_WARPS,
                num_stages=S_STAGES,
            )
            _sdpa_output_kernel[(triton.cdiv(head_dim_v, O_BLOCK_D), triton.cdiv(seq_q, O_BLOCK_M), count)](
                scores,
                tile_max,
                tile_sum,
                v4,
                o4,
                *v4.stride(),
                *o4.stride(),
                bh_start,
                heads,
                seq_q,
                seq_k,
                head_dim_v,
                n_tiles,
                BLOCK_M=O_BLOCK_M,
                BLOCK_N=O_BLOCK_N,
                BLOCK_D=O_BLOCK_D,
                EVEN_N=seq_k % O_BLOCK_N == 0,
                PRECISION=FP32_PRECISION,
                num_warps=O_WARPS,
                num_stages=O_STAGES,
            )
        return out
