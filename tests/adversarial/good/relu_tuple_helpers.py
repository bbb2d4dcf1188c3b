# good: relu where small module-level helpers return tuples, unpacked in forward: the launch
# parameters as (grid, block) and the fresh output with its element count as (out, n)
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


def _alloc(x):
    out = torch.empty_like(x)
    return out, x.numel()


def _launch_params(n, block=64):
    blocks = (n + block - 1) // block
    return (blocks,), block


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out, n = _alloc(x)
        grid, block = _launch_params(n, block=32 if n < 128 else 64)
        if n == 0:
            return out
        relu_kernel[grid](x, out, n, BLOCK=block)
        return out
