# good: KernelBench level-2 Linear + BatchNorm1d (training) + ReLU, the way many practitioners split it:
# an autotuned Triton GEMM (grid lambda over META, `key=` on the sizes), one Triton kernel writing the
# batch mean and biased variance into fp32 tensors and another normalising with ReLU; the running
# statistics moved on the host with `mul_` / `add_` under `torch.no_grad()`, as hand-written BN code does,
# and the counter stepped with `+= 1` (permissive: the running-stat update is PyTorch arithmetic)
# spec: kb_gemm_batchnorm_relu
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}, num_warps=4),
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}, num_warps=4),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def linear_bias_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BLOCK_K)):
        rk = k0 * BLOCK_K + tl.arange(0, BLOCK_K)
        a = tl.load(
            x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0
        )
        b = tl.load(
            w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0
        )
        acc = tl.dot(a, b, acc, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def column_stats_kernel(y_ptr, mean_ptr, var_ptr, M, N, BLOCK_M: tl.constexpr):
    col = tl.program_id(0)
    rows = tl.arange(0, BLOCK_M)
    total = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start in range(0, M, BLOCK_M):
        r = start + rows
        total += tl.load(y_ptr + r * N + col, mask=r < M, other=0.0)
    mean = tl.sum(total, axis=0) / M
    sq = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start in range(0, M, BLOCK_M):
        r = start + rows
        v = tl.load(y_ptr + r * N + col, mask=r < M, other=0.0)
        d = tl.where(r < M, v - mean, 0.0)
        sq += d * d
    tl.store(mean_ptr + col, mean)
    tl.store(var_ptr + col, tl.sum(sq, axis=0) / M)


@triton.jit
def bn_relu_apply_kernel(y_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, out_ptr, numel, N, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    col = offs % N
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    mean = tl.load(mean_ptr + col, mask=mask, other=0.0)
    var = tl.load(var_ptr + col, mask=mask, other=1.0)
    z = (y - mean) * tl.rsqrt(var + eps) * tl.load(w_ptr + col, mask=mask) + tl.load(b_ptr + col, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(z, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.gemm.out_features
        y = torch.empty((M, N), device=x.device, dtype=torch.float32)
        grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]), triton.cdiv(N, META["BLOCK_N"]))  # noqa: E731
        linear_bias_kernel[grid](x, self.gemm.weight, self.gemm.bias, y, M, N, K)
        mean = torch.empty(N, device=x.device, dtype=torch.float32)
        var = torch.empty(N, device=x.device, dtype=torch.float32)
        column_stats_kernel[(N,)](y, mean, var, M, N, BLOCK_M=16)
        out = torch.empty_like(y)
        BLOCK = 256
        bn_relu_apply_kernel[(triton.cdiv(M * N, BLOCK),)](
            y, mean, var, self.bn.weight, self.bn.bias, out, M * N, N, self.bn.eps, BLOCK=BLOCK
        )
        if self.training:
            m = self.bn.momentum
            with torch.no_grad():
                self.bn.running_mean.mul_(1 - m).add_(mean, alpha=m)
                self.bn.running_var.mul_(1 - m).add_(var * (M / (M - 1)), alpha=m)
                self.bn.num_batches_tracked += 1
        return out
