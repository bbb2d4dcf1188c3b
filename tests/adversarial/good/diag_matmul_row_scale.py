# good: KernelBench level-1 diag(A) @ B without building the diagonal matrix: row i of B scaled by A[i]
# spec: kb_diag_matmul
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_scale_kernel(a_ptr, b_ptr, out_ptr, M, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < M
    scale = tl.load(a_ptr + row)
    tl.store(out_ptr + row * M + offs, tl.load(b_ptr + row * M + offs, mask=mask) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        B = B.contiguous()
        N, M = B.shape
        out = torch.empty_like(B)
        row_scale_kernel[(N,)](A.contiguous(), B, out, M, BLOCK=triton.next_power_of_2(M))
        return out
