# kernelevolve-template: name=matvec family=matvec backend=triton
"""torch.matmul(A, B) with A of (M, K) and B of (K, 1): a matrix-vector product (KernelBench 4 form).

KernelBench's is 2048 x 1048576: 8.6 GB of A read once for 2048 outputs, so it is bound by memory, and
a GEMM tile (at least 16 columns of B where there is one) only adds work and registers. Here each
program owns BLOCK_M rows and a range of K, multiplies chunks of its rows by the matching chunk of B
elementwise (exact fp32, no tensor cores) into BLOCK_M x BLOCK_K lane sums, and adds the lanes at the
end. With few rows, K is split across programs (SPLIT_K) into an fp32 workspace that a second kernel
adds in a fixed order, so the result does not depend on scheduling.

Each lane adds K / (BLOCK_K * SPLIT_K) products; for KernelBench's rand inputs (outputs near 2.6e5)
the rounding stays orders of magnitude inside rtol 1e-4.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_M = 4  # tune: 1, 2, 4, 8, 16
BLOCK_K = 1024  # tune: 256, 512, 1024, 2048, 4096
NUM_WARPS = 4  # tune: 2, 4, 8
# K split across programs: 0 picks it from the shape (about PROGRAMS_PER_SM programs per SM), 1 never.
SPLIT_K = 0  # tune: 0, 1, 2, 4, 8
PROGRAMS_PER_SM = 4  # tune: 2, 4, 8


@triton.jit
def _matvec_kernel(
    a_ptr,
    b_ptr,
    out_ptr,
    M,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    k_per_split,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    split = tl.program_id(1)
    row_ok = rows < M
    row_offs = rows.to(tl.int64) * stride_am
    k_start = split * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    lanes = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_K], tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        ks = k0 + lanes
        k_ok = ks < k_end
        a = tl.load(
            a_ptr + row_offs[:, None] + ks.to(tl.int64)[None, :] * stride_ak,
            mask=row_ok[:, None] & k_ok[None, :],
            other=0.0,
            eviction_policy="evict_first",  # A is read once; B, reused by every program, stays in L2
        )
        b = tl.load(b_ptr + ks.to(tl.int64) * stride_bk, mask=k_ok, other=0.0)
        acc += a.to(tl.float32) * b.to(tl.float32)[None, :]
    total = tl.sum(acc, axis=1)
    tl.store(out_ptr + split.to(tl.int64) * M + rows, total, mask=row_ok)


@triton.jit
def _split_sum_kernel(part_ptr, y_ptr, M, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = rows < M
    total = tl.zeros([BLOCK], tl.float32)
    for s in range(SPLIT):  # in split order: the same sum on every run
        total += tl.load(part_ptr + s * M + rows, mask=ok, other=0.0)
    tl.store(y_ptr + rows, total.to(y_ptr.dtype.element_ty), mask=ok)


def _multiprocessors(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 1


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        if A.dim() != 2 or B.dim() != 2 or B.shape[1] != 1 or A.shape[1] != B.shape[0]:
            raise ValueError(
                f"the matvec template computes (M, K) @ (K, 1); got {tuple(A.shape)} @ {tuple(B.shape)}"
            )
        M, K = A.shape
        dtype = torch.promote_types(A.dtype, B.dtype)
        y = torch.empty((M, 1), dtype=dtype, device=A.device)
        if M == 0:
            return y
        if K == 0:
            return y.zero_()
        row_blocks = triton.cdiv(M, BLOCK_M)
        k_blocks = triton.cdiv(K, BLOCK_K)
        split = SPLIT_K or max(
            1, min(k_blocks, triton.cdiv(PROGRAMS_PER_SM * _multiprocessors(A.device), row_blocks))
        )
        k_per_split = triton.cdiv(k_blocks, split) * BLOCK_K
        split = triton.cdiv(K, k_per_split)
        # one split writes the result itself (fp32 here: the cast comes with the sum below otherwise)
        out = (
            y
            if split == 1 and dtype == torch.float32
            else torch.empty((split, M), dtype=torch.float32, device=A.device)
        )
        _matvec_kernel[(row_blocks, split)](
            A, B, out, M, K, A.stride(0), A.stride(1), B.stride(0), k_per_split,
            BLOCK_M=BLOCK_M, BLOCK_K=BLOCK_K, num_warps=NUM_WARPS,
        )  # fmt: skip
        if out is not y:
            block = 256
            _split_sum_kernel[(triton.cdiv(M, block),)](out, y, M, SPLIT=split, BLOCK=block, num_warps=4)
        return y
