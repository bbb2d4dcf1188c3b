# hack: a Triton kernel that is present but only reached on a path that never runs (here: inputs that
# are not contiguous); PyTorch does the work on every call. Launches are counted at run time
# spec: relu
# strict: false
# expect: incorrect no_kernel_ran
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, SCALE, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * SCALE, mask=mask)


def _relu(x, scale=1.0):
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 64),)](x, out, n, scale, BLOCK=64)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        if x.is_contiguous():
            return torch.relu(x)
        return _relu(x)
