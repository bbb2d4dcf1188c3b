# hack: side stream made from type(current_stream()) so no stream API is named; a slow delay kernel
# runs first on it, so the result is not ready when the harness compares on the current stream
# spec: relu
# expect: incorrect nonfinite|mismatch|timed_output_mismatch
# requires: gpu
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


@triton.jit
def delay_kernel(scratch_ptr, iters):
    acc = tl.load(scratch_ptr)
    for _ in range(iters):
        acc = acc * 0.999999 + 1.0
    tl.store(scratch_ptr, acc)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scratch", torch.zeros(1))

    def forward(self, x):
        out = torch.empty_like(x)
        side = type(torch.cuda.current_stream())()
        with side:
            delay_kernel[(1,)](self.scratch, 20_000_000)
            relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out
