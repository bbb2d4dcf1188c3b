# good: A.T @ B with the transpose as A.swapaxes(0, 1), a view whose strides the GEMM kernel reads
# (no copy of A), fp32 tl.dot at input_precision="ieee" (the fixture's tolerance is fp32's)
# spec: kb_matmul_transposed_a
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def strided_mm_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            a_ptr + rm[:, None] * sam + rk[None, :] * sak,
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + rk[:, None] * sbk + rn[None, :] * sbn,
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        a = A.swapaxes(0, 1)  # (M, K) view of the (K, M) input
        m, k = a.shape
        n = B.shape[1]
        c = torch.empty((m, n), device=A.device, dtype=A.dtype)
        grid = (triton.cdiv(m, 16), triton.cdiv(n, 16))
        strided_mm_kernel[grid](
            a, B, c, m, n, k, a.stride(0), a.stride(1), B.stride(0), B.stride(1), BM=16, BN=16, BK=16
        )
        return c
