# good: KernelBench level-2 Linear + sigmoid + sum(dim=1) + logsumexp(dim=0) with the GEMM by F.linear
# (permissive) and the whole epilogue in one Triton program: a loop over row blocks applies the sigmoid,
# sums each row and keeps an online logsumexp (running max and rescaled sum), stored as a 0-d tensor
# spec: kb_gemm_sigmoid_sum_lse
# strict: false
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def sigmoid_rowsum_lse_kernel(y_ptr, out_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    rn = tl.arange(0, BN)
    run_max = float("-inf")
    run_sum = 0.0
    for m0 in range(0, M, BM):
        rm = m0 + tl.arange(0, BM)
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        y = tl.load(y_ptr + rm[:, None] * stride_m + rn[None, :], mask=mask, other=0.0)
        rows = tl.sum(tl.where(mask, tl.sigmoid(y), 0.0), axis=1)
        rows = tl.where(rm < M, rows, float("-inf"))
        new_max = tl.maximum(run_max, tl.max(rows, axis=0))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(rows - new_max), axis=0)
        run_max = new_max
    tl.store(out_ptr, run_max + tl.log(run_sum))


class ModelNew(nn.Module):
    def __init__(self, in_features, hidden):
        super().__init__()
        self.linear = nn.Linear(in_features, hidden)

    def forward(self, x):
        y = F.linear(x, self.linear.weight, self.linear.bias).contiguous()
        M, N = y.shape
        out = y.new_empty(())
        sigmoid_rowsum_lse_kernel[(1,)](y, out, M, N, y.stride(0), BM=8, BN=triton.next_power_of_2(N))
        return out
