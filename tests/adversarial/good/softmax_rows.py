# good: row softmax, one program per row, max-subtracted, grid from a lambda over the meta-parameters
# spec: softmax
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_stride, out_stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        out = torch.empty((rows, cols), device=x.device, dtype=x.dtype)
        block = triton.next_power_of_2(cols)
        grid = lambda meta: (rows,)  # noqa: E731
        softmax_kernel[grid](x, out, x.stride(0), out.stride(0), cols, BLOCK=block)
        return out
