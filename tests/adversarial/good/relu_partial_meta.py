# good: relu where the launch is a functools.partial over kernel[grid] with **meta from a dict on self
# spec: relu
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.meta = {"BLOCK": 64, "num_warps": 2}

    def forward(self, x):
        n = x.numel()
        out = torch.empty_like(x)
        launch = functools.partial(relu_kernel[(triton.cdiv(n, self.meta["BLOCK"]),)], **self.meta)
        launch(x, out, n)
        return out
