# good: LayerNorm -> Linear -> ReLU as a training spec (forward and backward), all in Triton behind one
# autograd.Function over x and the four parameters: a LayerNorm forward kernel saving mean and rstd, a
# strided ieee tl.dot matmul kernel used for the forward GEMM (bias and ReLU fused), dN = dZ @ W and
# dW = dZ^T @ N by passing transposed strides, a column-sum kernel for the linear bias gradient, and a
# LayerNorm backward kernel per row writing dx and the gamma/beta terms, summed over rows by the same
# column-sum kernel
# spec: kb_layernorm_linear_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_fwd_kernel(x_ptr, g_ptr, b_ptr, n_ptr, xhat_ptr, rstd_ptr, D, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < D
    x = tl.load(x_ptr + row * D + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / D
    diff = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(diff * diff, axis=0) / D + eps)
    xhat = diff * rstd
    g = tl.load(g_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(xhat_ptr + row * D + cols, xhat, mask=mask)
    tl.store(n_ptr + row * D + cols, xhat * g + b, mask=mask)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def mm_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, sam, sak, sbk, sbn,
    HAS_BIAS: tl.constexpr, RELU: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    # c[M, N] = a[M, K] @ b[K, N] (+ bias, ReLU), both operands by strides; c contiguous
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(
            a_ptr + rm[:, None] * sam + ks[None, :] * sak,
            mask=(rm[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + ks[:, None] * sbk + rn[None, :] * sbn,
            mask=(ks[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b, input_precision="ieee")
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def relu_grad_kernel(dy_ptr, y_ptr, dz_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(dz_ptr + offs, tl.where(y > 0.0, dy, 0.0), mask=mask)


@triton.jit
def colsum_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros((BN,), tl.float32)
    for m0 in range(0, M, BM):
        rm = m0 + tl.arange(0, BM)
        acc += tl.sum(
            tl.load(
                x_ptr + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0
            ),
            axis=0,
        )
    tl.store(out_ptr + rn, acc, mask=rn < N)


@triton.jit
def ln_bwd_kernel(dn_ptr, xhat_ptr, rstd_ptr, g_ptr, dx_ptr, dg_rows_ptr, D, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < D
    dn = tl.load(dn_ptr + row * D + cols, mask=mask, other=0.0)
    xhat = tl.load(xhat_ptr + row * D + cols, mask=mask, other=0.0)
    g = tl.load(g_ptr + cols, mask=mask, other=0.0)
    rstd = tl.load(rstd_ptr + row)
    dxhat = dn * g
    c1 = tl.sum(dxhat, axis=0) / D
    c2 = tl.sum(dxhat * xhat, axis=0) / D
    tl.store(dx_ptr + row * D + cols, rstd * (dxhat - c1 - xhat * c2), mask=mask)
    tl.store(dg_rows_ptr + row * D + cols, dn * xhat, mask=mask)


def _mm(a, b, bias=None, relu=False):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device, dtype=a.dtype)
    mm_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](
        a, b, c, a if bias is None else bias, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        HAS_BIAS=bias is not None, RELU=relu, BM=16, BN=16, BK=16,
    )  # fmt: skip
    return c


def _colsum(x):
    M, N = x.shape
    out = torch.empty(N, device=x.device, dtype=x.dtype)
    colsum_kernel[(triton.cdiv(N, 32),)](x, out, M, N, BM=16, BN=32)
    return out


class LayerNormLinearReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, gamma, beta, weight, bias, eps):
        x = x.contiguous()
        M, D = x.shape
        normed = torch.empty_like(x)
        xhat = torch.empty_like(x)
        rstd = torch.empty(M, device=x.device, dtype=torch.float32)
        block = triton.next_power_of_2(D)
        ln_fwd_kernel[(M,)](x, gamma, beta, normed, xhat, rstd, D, eps, BLOCK=block)
        y = _mm(normed, weight.t(), bias, relu=True)
        ctx.save_for_backward(normed, xhat, rstd, gamma, weight, y)
        return y

    @staticmethod
    def backward(ctx, dy):
        normed, xhat, rstd, gamma, weight, y = ctx.saved_tensors
        M, D = normed.shape
        dy = dy.contiguous()
        dz = torch.empty_like(y)
        relu_grad_kernel[(triton.cdiv(y.numel(), 256),)](dy, y, dz, y.numel(), BLOCK=256)
        d_weight = _mm(dz.t(), normed)
        d_bias = _colsum(dz)
        dn = _mm(dz, weight)
        dx = torch.empty_like(normed)
        dg_rows = torch.empty_like(normed)
        ln_bwd_kernel[(M,)](dn, xhat, rstd, gamma, dx, dg_rows, D, BLOCK=triton.next_power_of_2(D))
        return dx, _colsum(dg_rows), _colsum(dn), d_weight, d_bias, None


class ModelNew(nn.Module):
    def __init__(self, features, out_features):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        self.fc = nn.Linear(features, out_features)

    def forward(self, x):
        return LayerNormLinearReLU.apply(
            x, self.norm.weight, self.norm.bias, self.fc.weight, self.fc.bias, self.norm.eps
        )
