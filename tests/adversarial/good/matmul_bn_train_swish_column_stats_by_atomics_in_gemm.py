# good: KernelBench level-2 Matmul + BatchNorm1d (training, momentum from the init inputs) + bias / divide /
# swish, with the batch statistics gathered in the GEMM's epilogue: each tile adds its columns' sums and
# sums of squares into zeroed fp32 buffers with tl.atomic_add; a finalize kernel turns them into mean and
# rstd and moves the running statistics; an elementwise kernel normalises and applies the (1,)-shaped
# bias, the divide and x * sigmoid(x); the counter stepped on the host
# spec: kb_matmul_bn_bias_divide_swish
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_stats_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    sum_ptr,
    sumsq_ptr,
    M,
    N,
    K,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0
        )
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.where(mask, acc, 0.0)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=mask)
    tl.atomic_add(sum_ptr + rn, tl.sum(acc, axis=0), mask=rn < N)
    tl.atomic_add(sumsq_ptr + rn, tl.sum(acc * acc, axis=0), mask=rn < N)


@triton.jit
def bn_finalize_kernel(
    sum_ptr, sumsq_ptr, mean_ptr, rstd_ptr, rm_ptr, rv_ptr, M, N, eps, momentum, BLOCK: tl.constexpr
):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    mean = tl.load(sum_ptr + cols, mask=mask, other=0.0) / M
    var = tl.maximum(tl.load(sumsq_ptr + cols, mask=mask, other=0.0) / M - mean * mean, 0.0)
    tl.store(mean_ptr + cols, mean, mask=mask)
    tl.store(rstd_ptr + cols, tl.rsqrt(var + eps), mask=mask)
    rm = tl.load(rm_ptr + cols, mask=mask, other=0.0)
    rv = tl.load(rv_ptr + cols, mask=mask, other=0.0)
    tl.store(rm_ptr + cols, (1.0 - momentum) * rm + momentum * mean, mask=mask)
    tl.store(rv_ptr + cols, (1.0 - momentum) * rv + momentum * var * M / (M - 1), mask=mask)


@triton.jit
def bn_bias_div_swish_kernel(
    y_ptr,
    mean_ptr,
    rstd_ptr,
    w_ptr,
    b_ptr,
    extra_bias_ptr,
    out_ptr,
    numel,
    N,
    inv_divide,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    col = offs % N
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    z = (y - tl.load(mean_ptr + col, mask=mask, other=0.0)) * tl.load(rstd_ptr + col, mask=mask, other=0.0)
    z = z * tl.load(w_ptr + col, mask=mask, other=0.0) + tl.load(b_ptr + col, mask=mask, other=0.0)
    z = (z + tl.load(extra_bias_ptr)) * inv_divide
    tl.store(out_ptr + offs, z * tl.sigmoid(z), mask=mask)


class ModelNew(nn.Module):
    def __init__(
        self, in_features, out_features, bn_eps=1e-5, bn_momentum=0.1, bias_shape=(1,), divide_value=1.0
    ):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features, eps=bn_eps, momentum=bn_momentum)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.divide_value = divide_value

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.matmul.out_features
        y = torch.empty((M, N), device=x.device, dtype=torch.float32)
        col_sum = torch.zeros(N, device=x.device, dtype=torch.float32)
        col_sumsq = torch.zeros(N, device=x.device, dtype=torch.float32)
        gemm_stats_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](
            x, self.matmul.weight, self.matmul.bias, y, col_sum, col_sumsq, M, N, K, BM=16, BN=16, BK=16
        )
        bn = self.bn
        mean = torch.empty(N, device=x.device, dtype=torch.float32)
        rstd = torch.empty(N, device=x.device, dtype=torch.float32)
        bn_finalize_kernel[(triton.cdiv(N, 32),)](
            col_sum,
            col_sumsq,
            mean,
            rstd,
            bn.running_mean,
            bn.running_var,
            M,
            N,
            bn.eps,
            bn.momentum,
            BLOCK=32,
        )
        bn.num_batches_tracked.add_(1)
        out = torch.empty_like(y)
        bn_bias_div_swish_kernel[(triton.cdiv(M * N, 128),)](
            y, mean, rstd, bn.weight, bn.bias, self.bias, out, M * N, N, 1.0 / self.divide_value, BLOCK=128
        )
        return out
