# good: KernelBench level-2 Matmul + BatchNorm1d (training) + bias / divide / swish in one fused kernel:
# each program owns a block of output features for the whole (small) batch, so it runs the GEMM for those
# columns, takes their batch statistics in registers, normalises, applies the epilogue and writes the new
# running mean and variance into fresh tensors, which forward copies into the module's buffers with
# `copy_`; the counter is a `+= 1` on the buffer
# spec: kb_matmul_bn_bias_divide_swish
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fused_linear_bn_swish_kernel(
    x_ptr,
    w_ptr,
    lin_b_ptr,
    gamma_ptr,
    beta_ptr,
    rm_ptr,
    rv_ptr,
    new_rm_ptr,
    new_rv_ptr,
    extra_ptr,
    out_ptr,
    M,
    N,
    K,
    eps,
    momentum,
    divide_value,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rm = tl.arange(0, BLOCK_M)
    nmask = rn < N
    mmask = rm < M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=mmask[:, None] & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=nmask[None, :] & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(lin_b_ptr + rn, mask=nmask, other=0.0)[None, :]
    valid = mmask[:, None] & nmask[None, :]
    mean = tl.sum(tl.where(valid, acc, 0.0), axis=0) / M
    centred = tl.where(valid, acc - mean[None, :], 0.0)
    var = tl.sum(centred * centred, axis=0) / M
    z = centred * tl.rsqrt(var + eps)[None, :]
    z = (
        z * tl.load(gamma_ptr + rn, mask=nmask, other=0.0)[None, :]
        + tl.load(beta_ptr + rn, mask=nmask, other=0.0)[None, :]
    )
    z = (z + tl.load(extra_ptr)) / divide_value
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], z * tl.sigmoid(z), mask=valid)
    rmean = tl.load(rm_ptr + rn, mask=nmask, other=0.0)
    rvar = tl.load(rv_ptr + rn, mask=nmask, other=0.0)
    tl.store(new_rm_ptr + rn, rmean + momentum * (mean - rmean), mask=nmask)
    tl.store(new_rv_ptr + rn, rvar + momentum * (var * M / (M - 1) - rvar), mask=nmask)


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
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        new_rm = torch.empty_like(self.bn.running_mean)
        new_rv = torch.empty_like(self.bn.running_var)
        BLOCK_N = 16
        fused_linear_bn_swish_kernel[(triton.cdiv(N, BLOCK_N),)](
            x,
            self.matmul.weight,
            self.matmul.bias,
            self.bn.weight,
            self.bn.bias,
            self.bn.running_mean,
            self.bn.running_var,
            new_rm,
            new_rv,
            self.bias,
            out,
            M,
            N,
            K,
            self.bn.eps,
            self.bn.momentum,
            self.divide_value,
            BLOCK_M=max(16, triton.next_power_of_2(M)),
            BLOCK_N=BLOCK_N,
            BLOCK_K=16,
        )
        with torch.no_grad():
            self.bn.running_mean.copy_(new_rm)
            self.bn.running_var.copy_(new_rv)
        self.bn.num_batches_tracked += 1
        return out
