"""Our transformer encoder layer, pasted into the seeds that replace Inductor's fused one (own_encoder.py).

`_own_transformer_encoder_layer` takes `aten._transformer_encoder_layer_fwd`'s signature and does what it
does on a dense batch-first input without a mask: the projections and the feed-forward block in our GEMM
(`_matmul`, gemm.py), the heads in our attention (`_ke_attention`, attention.py), and the residual adds,
biases and layer norms in one row kernel. Seeds paste gemm.py's and attention.py's code beside this one.
`# fmt: off` keeps the layout candidates have.
"""
# fmt: off

import torch
import triton
import triton.language as tl

from kernelevolve.variation.kernels.attention import _ke_attention
from kernelevolve.variation.kernels.gemm import _matmul


@triton.jit
def _ke_residual_norm_kernel(
    x_ptr, y_ptr, c_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps,
    HAS_Y: tl.constexpr, HAS_C: tl.constexpr, NORM: tl.constexpr, BLOCK: tl.constexpr,
):
    # one row: v = x (+ y, a residual row) (+ c, a bias over the columns); out = v, or v's layer norm
    # with weight w and bias b (biased variance, as PyTorch's)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    if HAS_C:
        v += tl.load(c_ptr + cols, mask=mask, other=0.0)
    if HAS_Y:
        v += tl.load(y_ptr + row * n_cols + cols, mask=mask, other=0.0)
    if NORM:
        mean = tl.sum(v, axis=0) / n_cols
        centred = tl.where(mask, v - mean, 0.0)
        variance = tl.sum(centred * centred, axis=0) / n_cols
        weight = tl.load(w_ptr + cols, mask=mask, other=0.0)
        bias = tl.load(b_ptr + cols, mask=mask, other=0.0)
        v = centred * tl.rsqrt(variance + eps) * weight + bias
    tl.store(out_ptr + row * n_cols + cols, v, mask=mask)


@triton.jit
def _ke_ffn_activation_kernel(x_ptr, n, USE_GELU: tl.constexpr, BLOCK: tl.constexpr):
    # in place: exact GELU (erf, PyTorch's default) or ReLU (NaN stays NaN, as in torch.relu)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    if USE_GELU:
        y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    else:
        y = tl.where(x != x, x, tl.maximum(x, 0.0))
    tl.store(x_ptr + offsets, y, mask=mask)


def _ke_residual_norm(x, residual, bias, weight, norm_bias, eps, norm):
    """x (+ residual) (+ bias), layer-normed with (weight, norm_bias) where `norm`; rows of x's last dim."""
    out = torch.empty_like(x)
    n_cols = x.shape[-1]
    if norm and weight is None:  # a layer norm without its affine weight or bias (bias=False layers)
        weight = torch.ones(n_cols, device=x.device, dtype=x.dtype)
    if norm and norm_bias is None:
        norm_bias = torch.zeros(n_cols, device=x.device, dtype=x.dtype)
    if out.numel():
        block = triton.next_power_of_2(n_cols)
        _ke_residual_norm_kernel[(x.numel() // n_cols,)](
            x, x if residual is None else residual, x if bias is None else bias,
            x if weight is None else weight, x if norm_bias is None else norm_bias, out, n_cols, eps,
            HAS_Y=residual is not None, HAS_C=bias is not None, NORM=norm, BLOCK=block,
            num_warps=max(1, min(16, block // 256)),
        )
    return out


def _ke_encoder_attention(x, batch, seq, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight):
    # self-attention of x (batch * seq, embed_dim): the output projection without its bias
    head_dim = embed_dim // num_heads
    qkv = _matmul(x, qkv_weight.t(), bias=qkv_bias).view(batch, seq, 3, num_heads, head_dim)
    query, key, value = qkv[:, :, 0].transpose(1, 2), qkv[:, :, 1].transpose(1, 2), qkv[:, :, 2].transpose(1, 2)
    heads = torch.empty((batch, seq, num_heads, head_dim), device=x.device, dtype=x.dtype)
    _ke_attention(query, key, value, None, False, heads.transpose(1, 2), None)
    return _matmul(heads.view(batch * seq, embed_dim), proj_weight.t())


def _ke_encoder_ffn(x, weight_1, bias_1, weight_2, use_gelu):
    # the feed-forward block without its second bias
    hidden = _matmul(x, weight_1.t(), bias=bias_1)
    n = hidden.numel()
    if n:
        _ke_ffn_activation_kernel[(triton.cdiv(n, 1024),)](hidden, n, USE_GELU=bool(use_gelu), BLOCK=1024)
    return _matmul(hidden, weight_2.t())


def _own_transformer_encoder_layer(
    src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu, norm_first, eps,
    norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2,
    mask=None, mask_type=None,
):
    # aten._transformer_encoder_layer_fwd's signature and result on a dense (B, S, E) input
    if mask is not None:
        raise NotImplementedError("our transformer encoder layer takes no attention mask")
    if src.is_nested or src.dim() != 3:
        raise NotImplementedError(f"our transformer encoder layer takes a dense (B, S, E) input, not {src.shape}")
    batch, seq = src.shape[0], src.shape[1]
    if src.numel() == 0:
        return src.clone()
    x = src.contiguous().view(batch * seq, embed_dim)
    weights = (qkv_weight, qkv_bias, proj_weight)
    if norm_first:
        normed = _ke_residual_norm(x, None, None, norm_weight_1, norm_bias_1, eps, True)
        projected = _ke_encoder_attention(normed, batch, seq, embed_dim, num_heads, *weights)
        x = _ke_residual_norm(projected, x, proj_bias, None, None, eps, False)
        normed = _ke_residual_norm(x, None, None, norm_weight_2, norm_bias_2, eps, True)
        fed = _ke_encoder_ffn(normed, ffn_weight_1, ffn_bias_1, ffn_weight_2, use_gelu)
        x = _ke_residual_norm(fed, x, ffn_bias_2, None, None, eps, False)
    else:
        projected = _ke_encoder_attention(x, batch, seq, embed_dim, num_heads, *weights)
        x = _ke_residual_norm(projected, x, proj_bias, norm_weight_1, norm_bias_1, eps, True)
        fed = _ke_encoder_ffn(x, ffn_weight_1, ffn_bias_1, ffn_weight_2, use_gelu)
        x = _ke_residual_norm(fed, x, ffn_bias_2, norm_weight_2, norm_bias_2, eps, True)
    return x.view(batch, seq, embed_dim)
