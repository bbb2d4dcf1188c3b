# good: fp16 matmul through a small launcher class (a frozen dataclass of tile sizes held as a ClassVar on
# ModelNew, `__call__` allocating and launching); the kernel computes C^T = B^T A^T into an (N, M) buffer
# and forward returns its `.t()` view (non-contiguous, the reference's values); fp32 accumulation
# spec: kb_half_matmul
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_t_kernel(a_ptr, b_ptr, ct_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # ct[n, m] = sum_k a[m, k] * b[k, n]; program tile over (n, m)
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rn = pid_n * BN + tl.arange(0, BN)
    rm = pid_m * BM + tl.arange(0, BM)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BN, BM), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        bt = tl.load(
            b_ptr + kk[None, :] * N + rn[:, None], mask=(rn[:, None] < N) & (kk[None, :] < K), other=0.0
        )
        at = tl.load(
            a_ptr + rm[None, :] * K + kk[:, None], mask=(kk[:, None] < K) & (rm[None, :] < M), other=0.0
        )
        acc += tl.dot(bt, at)
    tl.store(
        ct_ptr + rn[:, None] * M + rm[None, :], acc.to(tl.float16), mask=(rn[:, None] < N) & (rm[None, :] < M)
    )


@dataclass(frozen=True)
class TileConfig:
    block_m: int = 32
    block_n: int = 16
    block_k: int = 16
    num_warps: int = 4


class TransposedMatmul:
    def __init__(self, config: TileConfig):
        self.config = config

    def grid(self, m: int, n: int) -> tuple[int, int]:
        return (triton.cdiv(n, self.config.block_n), triton.cdiv(m, self.config.block_m))

    def __call__(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        b = b.contiguous()
        m, k = a.shape
        n = b.shape[1]
        ct = torch.empty((n, m), device=a.device, dtype=a.dtype)
        cfg = self.config
        matmul_t_kernel[self.grid(m, n)](
            a, b, ct, m, n, k, BM=cfg.block_m, BN=cfg.block_n, BK=cfg.block_k, num_warps=cfg.num_warps
        )
        return ct.t()


class ModelNew(nn.Module):
    CONFIG: ClassVar[TileConfig] = TileConfig()

    def __init__(self):
        super().__init__()
        self.matmul = TransposedMatmul(self.CONFIG)

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.matmul(A, B)
