# good: KernelBench level-2 Linear + BatchNorm1d (training) + bias + divide + swish, whole forward in one
# Triton launch per column block: the GEMM tile holds the whole batch, so the kernel takes the batch
# statistics from it, moves the running statistics in place, then bias / divide / swish; the `self.training`
# branch picks batch statistics vs the running ones by a constexpr; num_batches_tracked counted on the host
# spec: kb_matmul_bn_bias_divide_swish
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fused_kernel(
    x_ptr,
    w_ptr,
    lb_ptr,
    g_ptr,
    beta_ptr,
    rm_ptr,
    rv_ptr,
    bias_ptr,
    out_ptr,
    M,
    N,
    K,
    eps,
    momentum,
    inv_div,
    TRAINING: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    rm = tl.arange(0, BM)
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    mmask = rm < M
    nmask = rn < N
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=mmask[:, None] & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=nmask[None, :] & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(lb_ptr + rn, mask=nmask, other=0.0)[None, :]
    valid = mmask[:, None] & nmask[None, :]
    if TRAINING:
        mean = tl.sum(tl.where(valid, acc, 0.0), axis=0) / M
        d = tl.where(valid, acc - mean[None, :], 0.0)
        var = tl.sum(d * d, axis=0) / M
        old_m = tl.load(rm_ptr + rn, mask=nmask, other=0.0)
        old_v = tl.load(rv_ptr + rn, mask=nmask, other=0.0)
        tl.store(rm_ptr + rn, (1.0 - momentum) * old_m + momentum * mean, mask=nmask)
        tl.store(rv_ptr + rn, (1.0 - momentum) * old_v + momentum * var * M / (M - 1), mask=nmask)
    else:
        mean = tl.load(rm_ptr + rn, mask=nmask, other=0.0)
        var = tl.load(rv_ptr + rn, mask=nmask, other=1.0)
        d = acc - mean[None, :]
    g = tl.load(g_ptr + rn, mask=nmask, other=1.0)
    beta = tl.load(beta_ptr + rn, mask=nmask, other=0.0)
    y = d / tl.sqrt(var[None, :] + eps) * g[None, :] + beta[None, :]
    y = (y + tl.load(bias_ptr)) * inv_div
    y = y * tl.sigmoid(y)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], y, mask=valid)


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
        M, K = map(int, x.shape)
        N = int(self.matmul.out_features)
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        if self.training:
            self.bn.num_batches_tracked += 1
        BM = triton.next_power_of_2(M)
        fused_kernel[(triton.cdiv(N, 16),)](
            x,
            self.matmul.weight,
            self.matmul.bias,
            self.bn.weight,
            self.bn.bias,
            self.bn.running_mean,
            self.bn.running_var,
            self.bias,
            out,
            M,
            N,
            K,
            self.bn.eps,
            self.bn.momentum,
            1.0 / self.divide_value,
            TRAINING=self.training,
            BM=max(BM, 16),
            BN=16,
            BK=16,
        )
        return out
