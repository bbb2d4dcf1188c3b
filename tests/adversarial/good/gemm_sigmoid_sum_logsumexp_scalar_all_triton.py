# good: KernelBench level-2 Linear + sigmoid + sum(dim=1) + logsumexp(dim=0), a 0-d output, all in Triton:
# a kernel per row block computes the GEMM by ieee tl.dot, adds the bias, applies the sigmoid and sums
# each row (padded columns masked out) into a (batch,) scratch; a one-program kernel takes the logsumexp of
# the row sums into a 0-d tensor
# spec: kb_gemm_sigmoid_sum_lse
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_sigmoid_rowsum_kernel(
    x_ptr, w_ptr, b_ptr, rows_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
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
    s = tl.sigmoid(acc + tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :])
    s = tl.where(rn[None, :] < N, s, 0.0)
    tl.store(rows_ptr + rm, tl.sum(s, axis=1), mask=rm < M)


@triton.jit
def logsumexp_scalar_kernel(rows_ptr, out_ptr, M, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(rows_ptr + offs, mask=offs < M, other=float("-inf"))
    m = tl.max(v, axis=0)
    tl.store(out_ptr, m + tl.log(tl.sum(tl.exp(v - m), axis=0)))


class ModelNew(nn.Module):
    def __init__(self, in_features, hidden):
        super().__init__()
        self.linear = nn.Linear(in_features, hidden)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.linear.out_features
        rows = torch.empty(M, device=x.device, dtype=torch.float32)
        out = torch.empty((), device=x.device, dtype=x.dtype)
        BM = 16
        gemm_sigmoid_rowsum_kernel[(triton.cdiv(M, BM),)](
            x, self.linear.weight, self.linear.bias, rows, M, N, K,
            BM=BM, BN=max(16, triton.next_power_of_2(N)), BK=16,
        )  # fmt: skip
        logsumexp_scalar_kernel[(1,)](rows, out, M, BLOCK=max(16, triton.next_power_of_2(M)))
        return out
