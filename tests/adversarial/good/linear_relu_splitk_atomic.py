# good: linear + relu as split-K: a 3-D grid (M tiles, N tiles, K splits) each tl.dot-ing its K slice and
# tl.atomic_add-ing the partial product into a torch.zeros fp32 buffer, then a bias + relu epilogue kernel
# writing the output; the nn.Linear's parameters held, never called
# spec: linear_relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def splitk_kernel(
    x_ptr,
    w_ptr,
    acc_ptr,
    M,
    N,
    K,
    SPLIT_K: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    a = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    # w is (N, K): load its K x N tile transposed
    b = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
    part = tl.dot(a, b, input_precision="ieee")
    tl.atomic_add(acc_ptr + rm[:, None] * N + rn[None, :], part, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def bias_relu_kernel(acc_ptr, b_ptr, out_ptr, N, total, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    y = tl.load(acc_ptr + offs, mask=mask, other=0.0) + tl.load(b_ptr + offs % N, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(y, 0.0), mask=mask)


class ModelNew(nn.Module):
    SPLIT_K = 2
    BLOCK_M, BLOCK_N, BLOCK_K = 16, 16, 16

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight
        M, K = x.shape
        N = w.shape[0]
        acc = torch.zeros((M, N), dtype=torch.float32, device=x.device)
        grid = (triton.cdiv(M, self.BLOCK_M), triton.cdiv(N, self.BLOCK_N), triton.cdiv(K, self.BLOCK_K))
        splitk_kernel[grid](
            x,
            w,
            acc,
            M,
            N,
            K,
            SPLIT_K=self.SPLIT_K,
            BLOCK_M=self.BLOCK_M,
            BLOCK_N=self.BLOCK_N,
            BLOCK_K=self.BLOCK_K,
        )
        out = torch.empty_like(acc)
        bias_relu_kernel[(triton.cdiv(M * N, 128),)](acc, self.linear.bias, out, N, M * N, BLOCK=128)
        return out
