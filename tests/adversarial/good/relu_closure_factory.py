# good: relu through a launcher closure made by a factory in __init__ (kernel and block captured)
# spec: relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0.0), mask=mask)


def make_launcher(kernel, block):
    def launch(x):
        n = x.numel()
        out = torch.empty_like(x)
        kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
        return out

    return launch


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._launch = make_launcher(relu_kernel, 64)

    def forward(self, x):
        return self._launch(x.contiguous())
