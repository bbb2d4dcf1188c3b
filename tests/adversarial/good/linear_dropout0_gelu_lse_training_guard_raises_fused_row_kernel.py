# good: KernelBench level-2 Linear + Dropout(p=0) + GELU + logsumexp, all Triton in one launch per row
# block: GEMM + bias, erf GELU and the row logsumexp fused, (M, 1) output; the forward guards dropout the
# way LLMs do, `if self.training and self.dropout.p > 0: raise NotImplementedError(...)` (never taken:
# p = 0), the grid from `x.shape` ints
# spec: kb_linear_dropout0_gelu_lse
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_gelu_lse_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
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
    g = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    g = tl.where(rn[None, :] < N, g, -float("inf"))
    mx = tl.max(g, axis=1)
    lse = mx + tl.log(tl.sum(tl.exp(g - mx[:, None]), axis=1))
    tl.store(out_ptr + rm, lse, mask=rm < M)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(p=0.0)

    def forward(self, x):
        if self.training and self.dropout.p > 0:
            raise NotImplementedError("fused kernel assumes dropout p == 0")
        x = x.contiguous()
        M, K = x.shape
        M, K = int(M), int(K)
        N = self.linear.out_features
        out = torch.empty((M, 1), device=x.device, dtype=x.dtype)
        linear_gelu_lse_kernel[(triton.cdiv(M, 16),)](
            x, self.linear.weight, self.linear.bias, out, M, N, K, BM=16, BN=triton.next_power_of_2(N), BK=16
        )
        return out
