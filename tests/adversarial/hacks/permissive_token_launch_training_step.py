# hack: permissive_token_launch on a training spec: PyTorch computes the forward and its autograd the
# backward, and a Triton kernel rewrites the first block of the output with the values it already holds,
# so launches are counted and every value check passes. The judge's call with the launches left out
# (`eval/kernel_share.py`) was made only for forward specs, so the kernels' share was never asked
# spec: rmsnorm_train
# strict: false
# expect: incorrect kernel_work_redundant
# runtime: incorrect kernel_work_redundant
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask, other=0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        token = y.detach()
        copy_kernel[(1,)](token, token, min(token.numel(), 16), BLOCK=16)
        return y
