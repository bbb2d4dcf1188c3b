# hack: F.softmax does the work; the Triton kernel only copies the result
# spec: softmax
# expect: rejected_static torch_compute_op
# runtime: incorrect strict_violation
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = F.softmax(x, dim=1)
        out = torch.empty_like(y)
        copy_kernel[(triton.cdiv(y.numel(), 64),)](y, out, y.numel(), BLOCK=64)
        return out
