# good: row softmax with @triton.autotune over several configs, key on the row width, and a grid given as a
# tuple; BLOCK is chosen by the autotuner (never passed at the launch), an early exit on empty input
# spec: softmax
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((64, 2), (128, 4), (256, 8))],
    key=["cols"],
)
@triton.jit
def softmax_kernel(x_ptr, out_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        if x.numel() == 0:
            return out
        x = x.contiguous()
        rows, cols = x.shape
        softmax_kernel[(rows,)](x, out, x.stride(0), cols)
        return out
