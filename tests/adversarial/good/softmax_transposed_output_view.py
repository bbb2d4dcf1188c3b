# good: row softmax whose kernel writes a column-major (cols, rows) buffer and returns its .t() (a
# non-contiguous view of the right shape), output strides passed to the kernel
# spec: softmax
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, sxr, sxc, sor, soc, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=mask, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * sor + offs * soc, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        buf = torch.empty((cols, rows), dtype=x.dtype, device=x.device)
        out = buf.t()
        softmax_kernel[(rows,)](
            x,
            out,
            cols,
            x.stride(0),
            x.stride(1),
            out.stride(0),
            out.stride(1),
            BLOCK=triton.next_power_of_2(cols),
        )
        return out
