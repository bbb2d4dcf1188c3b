# good: KernelBench level-1 matrix-scalar multiply: the scalar is a Python float among the inputs, passed
# to the kernel as a runtime scalar argument
# spec: kb_matrix_scalar
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(a_ptr, out_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) * s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        A = A.contiguous()
        out = torch.empty_like(A)
        n = A.numel()
        BLOCK = 256
        scale_kernel[(triton.cdiv(n, BLOCK),)](A, out, s, n, BLOCK=BLOCK)
        return out
