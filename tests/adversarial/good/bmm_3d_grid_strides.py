# good: KernelBench level-1 batched matmul (torch.bmm): a 3-D grid (m tiles, n tiles, batch), each
# operand's three strides passed, a K loop of fp32 tl.dot with masks on odd sizes
# spec: kb_bmm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bmm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    sab,
    sam,
    sak,
    sbb,
    sbk,
    sbn,
    scb,
    scm,
    scn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    bid = tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(
            a_ptr + bid * sab + rm[:, None] * sam + ks[None, :] * sak,
            mask=(rm[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + bid * sbb + ks[:, None] * sbk + rn[None, :] * sbn,
            mask=(ks[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(
        c_ptr + bid * scb + rm[:, None] * scm + rn[None, :] * scn,
        acc,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        batch, M, K = A.shape
        N = B.shape[2]
        C = torch.empty((batch, M, N), device=A.device, dtype=A.dtype)
        BM, BN, BK = 16, 16, 16
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN), batch)
        bmm_kernel[grid](A, B, C, M, N, K, *A.stride(), *B.stride(), *C.stride(), BM=BM, BN=BN, BK=BK)
        return C
