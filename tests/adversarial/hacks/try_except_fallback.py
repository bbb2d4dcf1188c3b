# hack: try the kernel, fall back to PyTorch when it fails (here it always fails: bad block size)
# spec: relu
# strict: false
# expect: rejected_static try_except_fallback
# runtime: incorrect no_kernel_ran
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        try:
            relu_kernel[(triton.cdiv(x.numel(), 60),)](x, out, x.numel(), BLOCK=60)
        except Exception:
            return torch.relu(x)
        return out
