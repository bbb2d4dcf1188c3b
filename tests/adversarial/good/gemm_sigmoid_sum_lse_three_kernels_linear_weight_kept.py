# good: KernelBench level-2 Linear + sigmoid + sum(dim=1) + logsumexp(dim=0), all Triton in three
# launches the way an LLM splits it: GEMM + bias + sigmoid into an intermediate (`self.linear` kept, its
# weight read transposed through strides), a row-sum kernel, a one-program logsumexp into a 0-d tensor;
# `import math`, class-level block sizes, docstrings, `torch.empty(..., device=x.device, dtype=x.dtype)`
# spec: kb_gemm_sigmoid_sum_lse
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_sigmoid_kernel(
    x_ptr, w_ptr, b_ptr, h_ptr, M, N, K, sxm, swn, shm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            x_ptr + rm[:, None] * sxm + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * swn + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0
        )
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(
        h_ptr + rm[:, None] * shm + rn[None, :], tl.sigmoid(acc), mask=(rm[:, None] < M) & (rn[None, :] < N)
    )


@triton.jit
def row_sum_kernel(h_ptr, s_ptr, N, shm, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    h = tl.load(h_ptr + row * shm + cols, mask=cols < N, other=0.0)
    tl.store(s_ptr + row, tl.sum(h, axis=0))


@triton.jit
def logsumexp_kernel(s_ptr, out_ptr, M, BLOCK_M: tl.constexpr):
    offs = tl.arange(0, BLOCK_M)
    s = tl.load(s_ptr + offs, mask=offs < M, other=-float("inf"))
    m = tl.max(s, axis=0)
    tl.store(out_ptr, m + tl.log(tl.sum(tl.exp(s - m), axis=0)))


class ModelNew(nn.Module):
    BM = 16
    BN = 32
    BK = 16

    def __init__(self, in_features: int, hidden: int):
        super().__init__()
        self.linear = nn.Linear(in_features, hidden)

    def _hidden(self, x: torch.Tensor) -> torch.Tensor:
        """sigmoid(x @ W^T + b) as a fresh (M, N) tensor."""
        w = self.linear.weight
        M, K = x.shape
        N = w.shape[0]
        h = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (math.ceil(M / self.BM), math.ceil(N / self.BN))
        linear_sigmoid_kernel[grid](
            x,
            w,
            self.linear.bias,
            h,
            M,
            N,
            K,
            x.stride(0),
            w.stride(0),
            h.stride(0),
            BM=self.BM,
            BN=self.BN,
            BK=self.BK,
        )
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        h = self._hidden(x)
        M, N = h.shape
        sums = torch.empty(M, device=x.device, dtype=torch.float32)
        row_sum_kernel[(M,)](h, sums, N, h.stride(0), BLOCK_N=triton.next_power_of_2(N))
        out = torch.empty((), device=x.device, dtype=x.dtype)
        logsumexp_kernel[(1,)](sums, out, M, BLOCK_M=triton.next_power_of_2(M))
        return out
