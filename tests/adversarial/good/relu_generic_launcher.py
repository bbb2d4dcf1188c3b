# good: a generic elementwise launcher that takes the kernel as an argument (and a mapping of kernels
# by name on the class), so forward never spells kernel[grid](...) itself
# spec: relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(v, 0.0), mask=mask)


def launch_elementwise(kernel, x, block=64):
    out = torch.empty_like(x)
    n = x.numel()
    kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
    return out


class ModelNew(nn.Module):
    KERNELS = {"relu": relu_kernel}

    def __init__(self):
        super().__init__()
        self.activation = "relu"

    def forward(self, x):
        return launch_elementwise(self.KERNELS[self.activation], x.contiguous())
