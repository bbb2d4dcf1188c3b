# good: A.T @ B with A given (K, M): the kernel reads A through its transposed strides (no copy); the
# module sets torch.backends.cuda.matmul.allow_tf32 and cudnn.allow_tf32 off at import, as training
# scripts do, and the dot uses input_precision="ieee"
# spec: kb_matmul_transposed_a
import torch
import torch.nn as nn
import triton
import triton.language as tl

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


@triton.jit
def at_b_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, sak, sam, sbk, sbn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            a_ptr + rk[None, :] * sak + rm[:, None] * sam,
            mask=(rk[None, :] < K) & (rm[:, None] < M),
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
        K, M = A.shape
        N = B.shape[1]
        C = torch.empty((M, N), device=A.device, dtype=A.dtype)
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        at_b_kernel[grid](
            A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1), BM=16, BN=16, BK=16
        )
        return C
