# good: the batched GEMM spec in fp16 as an LLM often writes it: inputs converted on entry
# (`A = A.to(torch.float16).contiguous()`), an early return for an empty batch, a 3-D grid with the batch
# on axis 2, the accumulator threaded through `tl.dot(a, b, acc=acc)` in fp32 and cast on the store, the
# output `torch.empty((b, m, n), dtype=A.dtype)`; tile sizes in a NamedTuple config from a
# functools.lru_cache'd chooser
# spec: shipped:batched_gemm
import functools
from typing import NamedTuple

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Tiles(NamedTuple):
    block_m: int
    block_n: int
    block_k: int
    num_warps: int


@functools.lru_cache(maxsize=128)
def choose_tiles(m: int, n: int, k: int) -> Tiles:
    if m * n >= 128 * 128:
        return Tiles(64, 64, 32, 4)
    return Tiles(16, 32, 16, 2)


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
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    batch = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_base = a_ptr + batch * sab
    b_base = b_ptr + batch * sbb
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + rk
        a = tl.load(
            a_base + rm[:, None] * sam + ks[None, :] * sak,
            mask=(rm[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_base + ks[:, None] * sbk + rn[None, :] * sbn,
            mask=(ks[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc=acc)
    c = acc.to(tl.float16)
    tl.store(
        c_ptr + batch * scb + rm[:, None] * scm + rn[None, :] * scn,
        c,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A = A.to(torch.float16).contiguous()
        B = B.to(torch.float16).contiguous()
        batch, m, k = A.shape
        n = B.shape[2]
        C = torch.empty((batch, m, n), device=A.device, dtype=A.dtype)
        if batch == 0 or m == 0 or n == 0:
            return C
        t = choose_tiles(m, n, k)
        grid = (triton.cdiv(m, t.block_m), triton.cdiv(n, t.block_n), batch)
        bmm_kernel[grid](
            A,
            B,
            C,
            m,
            n,
            k,
            A.stride(0),
            A.stride(1),
            A.stride(2),
            B.stride(0),
            B.stride(1),
            B.stride(2),
            C.stride(0),
            C.stride(1),
            C.stride(2),
            BLOCK_M=t.block_m,
            BLOCK_N=t.block_n,
            BLOCK_K=t.block_k,
            num_warps=t.num_warps,
        )
        return C
