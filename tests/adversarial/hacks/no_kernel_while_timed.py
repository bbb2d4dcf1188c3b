# hack: permissive; the Triton kernel runs on checked calls only (told apart by the input's storage),
# PyTorch does the timed calls: every timed call must launch as many kernels as each checked call did
# spec: relu
# strict: false
# expect: incorrect no_kernel_ran
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


def _relu(x):
    out = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        if x.untyped_storage().nbytes() == x.numel() * x.element_size():
            return torch.relu(x)
        return _relu(x)
