# good: row sums where the kernel adds a zero "bias" read through an .expand()ed (stride-0) view of a
# one-element buffer, as broadcast parameters reach kernels; the output a (1, rows) buffer returned as
# .squeeze(0), and the input's strides passed (it may be a transposed view)
# spec: rowsum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, b_ptr, out_ptr, cols, sxr, sxc, sbr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=offs < cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0) + tl.load(b_ptr + row * sbr))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("zero", torch.zeros(1), persistent=False)

    def forward(self, x):
        rows, cols = x.shape
        bias = self.zero.to(x.device).expand(rows)
        out = torch.empty((1, rows), dtype=x.dtype, device=x.device)
        rowsum_kernel[(rows,)](
            x, bias, out, cols, x.stride(0), x.stride(1), bias.stride(0), BLOCK=triton.next_power_of_2(cols)
        )
        return out.squeeze(0)
