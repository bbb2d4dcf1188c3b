"""Our Triton attention, pasted into the seeds that replace Inductor's fused attention ops (own_attention.py).

A flash-attention forward: each program owns a block of query rows of one (batch, head) and streams keys
and values through an online softmax, so the score matrix never reaches memory; any strides, key and value
head sizes up to 256, and top-left causal masking (PyTorch's `is_causal`). `_own_efficient_attention`,
`_own_flash_attention` and `_own_cpu_flash_attention` take the library ops' signatures and give their
outputs in the layouts of the ops' meta functions. An attention mask or bias, or dropout, is refused with
an error. `# fmt: off` keeps the layout candidates have.
"""
# fmt: off

import torch
import triton
import triton.language as tl

# ke:tunables begin
ATTN_BLOCK_M = 64  # tune: 32, 64, 128
ATTN_BLOCK_N = 64  # tune: 32, 64, 128
ATTN_WARPS = 4  # tune: 4, 8
ATTN_STAGES = 2  # tune: 1, 2, 3
# fp32 dot precision: "tf32x3" near-fp32 on tensor cores (as the flash_attention template), "ieee" exact
ATTN_FP32_PRECISION = "tf32x3"  # tune: "tf32x3", "ieee"
# ke:tunables end


@triton.jit
def _ke_attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,
    stride_qz, stride_qh, stride_qm, stride_qd, stride_kz, stride_kh, stride_kn, stride_kd,
    stride_vz, stride_vh, stride_vn, stride_vd, stride_oz, stride_oh, stride_om, stride_od,
    stride_lz, stride_lh, stride_lm,
    heads, seq_q, seq_k, qk_scale,
    HEAD_DIM: tl.constexpr, VALUE_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, IS_CAUSAL: tl.constexpr, STORE_LSE: tl.constexpr,
    PRECISION: tl.constexpr,
):
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    z = (zh // heads).to(tl.int64)
    h = (zh % heads).to(tl.int64)
    q_base = q_ptr + z * stride_qz + h * stride_qh
    k_base = k_ptr + z * stride_kz + h * stride_kh
    v_base = v_ptr + z * stride_vz + h * stride_vh
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols_in_block = tl.arange(0, BLOCK_N)
    dims = tl.arange(0, BLOCK_D)
    value_dims = tl.arange(0, BLOCK_DV)
    row_ok = rows < seq_q
    q = tl.load(
        q_base + rows[:, None] * stride_qm + dims[None, :] * stride_qd,
        mask=row_ok[:, None] & (dims[None, :] < HEAD_DIM), other=0.0,
    )
    # running row maximum (of scores in log2 units) and normaliser: the online softmax
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    for start_n in range(0, seq_k, BLOCK_N):
        cols = start_n + cols_in_block
        col_ok = cols < seq_k
        k = tl.load(
            k_base + cols[None, :] * stride_kn + dims[:, None] * stride_kd,
            mask=col_ok[None, :] & (dims[:, None] < HEAD_DIM), other=0.0,
        )
        s = tl.dot(q, k, input_precision=PRECISION) * qk_scale
        keep = col_ok[None, :]
        if IS_CAUSAL:  # top-left aligned, as PyTorch's is_causal: row i sees columns 0..i
            keep = keep & (cols[None, :] <= rows[:, None])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(
            v_base + cols[:, None] * stride_vn + value_dims[None, :] * stride_vd,
            mask=col_ok[:, None] & (value_dims[None, :] < VALUE_DIM), other=0.0,
        )
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=PRECISION)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(
        o_ptr + z * stride_oz + h * stride_oh + rows[:, None] * stride_om + value_dims[None, :] * stride_od,
        out.to(o_ptr.dtype.element_ty),
        mask=row_ok[:, None] & (value_dims[None, :] < VALUE_DIM),
    )
    if STORE_LSE:  # natural-log log-sum-exp of the scaled scores, as the library ops return it
        lse = (m_i + tl.log2(l_i)) * 0.6931471805599453
        tl.store(lse_ptr + z * stride_lz + h * stride_lh + rows * stride_lm, lse, mask=row_ok)


def _ke_attention_refuses(mask, dropout_p):
    # what the kernel does not do: the candidate fails with this, and the search records it
    if mask is not None:
        raise NotImplementedError("our attention kernel takes no attention mask or bias")
    if dropout_p:
        raise NotImplementedError(f"our attention kernel does no dropout (dropout_p={dropout_p})")


def _ke_attention(query, key, value, scale, is_causal, out, lse):
    """softmax(query key^T * scale) value into `out` (and the log-sum-exp into `lse` unless None)."""
    batch, heads, seq_q, head_dim = query.shape
    seq_k, value_dim = key.shape[2], value.shape[3]
    if max(head_dim, value_dim) > 256:  # the tiles stay on chip: past this they outgrow it
        raise ValueError(f"our attention kernel takes head sizes up to 256, not {head_dim} and {value_dim}")
    if out.numel() == 0:
        return
    qk_scale = (head_dim ** -0.5 if scale is None else scale) * 1.4426950408889634  # log2(e): exp2
    lse_view = out if lse is None else lse
    _ke_attention_kernel[(triton.cdiv(seq_q, ATTN_BLOCK_M), batch * heads)](
        query, key, value, out, lse_view,
        *query.stride(), *key.stride(), *value.stride(), *out.stride(),
        lse_view.stride(0), lse_view.stride(1), lse_view.stride(2),
        heads, seq_q, seq_k, qk_scale,
        HEAD_DIM=head_dim, VALUE_DIM=value_dim,
        BLOCK_D=max(16, triton.next_power_of_2(head_dim)), BLOCK_DV=max(16, triton.next_power_of_2(value_dim)),
        BLOCK_M=ATTN_BLOCK_M, BLOCK_N=ATTN_BLOCK_N, IS_CAUSAL=bool(is_causal), STORE_LSE=lse is not None,
        PRECISION=ATTN_FP32_PRECISION if query.dtype == torch.float32 else None,
        num_warps=ATTN_WARPS, num_stages=ATTN_STAGES,
    )


def _own_efficient_attention(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False, *, scale=None):
    # aten._scaled_dot_product_efficient_attention's signature and outputs: the output's storage is
    # (B, M, H, Ev), the log-sum-exp padded to 32 query rows, and (unused) RNG state
    _ke_attention_refuses(attn_bias, dropout_p)
    batch, heads, seq_q = query.shape[:3]
    out = torch.empty((batch, seq_q, heads, value.shape[3]), device=query.device, dtype=query.dtype).transpose(1, 2)
    lse_rows = (seq_q + 31) // 32 * 32 if compute_log_sumexp else 0
    lse = torch.empty((batch, heads, lse_rows), device=query.device, dtype=torch.float32)
    _ke_attention(query, key, value, scale, is_causal, out, lse if compute_log_sumexp else None)
    seed = torch.empty((), device=query.device, dtype=torch.int64)
    offset = torch.empty((), device=query.device, dtype=torch.int64)
    return out, lse, seed, offset


def _own_flash_attention(query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
    # aten._scaled_dot_product_flash_attention's (CUDA, fp16/bf16): the output laid out as the query, the
    # log-sum-exp (B, H, M), no sequence offsets, the sequence lengths, and (unused) RNG state and mask
    _ke_attention_refuses(None, dropout_p)
    batch, heads, seq_q = query.shape[:3]
    out = torch.empty_like(query)
    lse = torch.empty((batch, heads, seq_q), device=query.device, dtype=torch.float32)
    _ke_attention(query, key, value, scale, is_causal, out, lse)
    rng_state = torch.empty((2,), device=query.device, dtype=torch.uint64)
    unused = torch.empty((), device=query.device, dtype=torch.uint64)
    debug_mask = torch.empty((0,), device=query.device, dtype=query.dtype)
    return out, lse, None, None, seq_q, key.shape[2], rng_state, unused, debug_mask


def _own_cpu_flash_attention(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    # aten._scaled_dot_product_flash_attention_for_cpu's: the output laid out as the query, and the
    # log-sum-exp with (B, M, H) storage
    _ke_attention_refuses(attn_mask, dropout_p)
    batch, heads, seq_q = query.shape[:3]
    out = torch.empty_like(query)
    lse = torch.empty((batch, seq_q, heads), device=query.device, dtype=torch.float32).transpose(1, 2)
    _ke_attention(query, key, value, scale, is_causal, out, lse)
    return out, lse
