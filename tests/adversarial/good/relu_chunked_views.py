# good: relu over two halves of the input, each launched on a view of the input into the matching view
# of one output, by a module-level launcher instance whose __call__ picks the block size
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
    tl.store(out_ptr + offs, tl.where(v > 0, v, 0.0), mask=mask)


class _Launcher:
    def __init__(self, block):
        self.block = block

    def __call__(self, src, dst):
        n = src.numel()
        relu_kernel[(triton.cdiv(n, self.block),)](src, dst, n, BLOCK=self.block)


LAUNCH = _Launcher(32)


class ModelNew(nn.Module):
    def forward(self, x):
        flat = x.reshape(-1)
        out = torch.empty_like(flat)
        half = flat.numel() // 2
        for src, dst in ((flat[:half], out[:half]), (flat[half:], out[half:])):
            LAUNCH(src, dst)
        return out.view(x.shape)
