# good: x > mean(x, dim) with a torch.bool output written as bytes: the kernel stores 0/1 into a
# torch.uint8 buffer (the common workaround for int1 stores), returned reinterpreted with .view(torch.bool)
# spec: kb_greater_than_mean
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gt_mean_u8_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    tl.store(out_ptr + row * cols + offs, (x > mean).to(tl.uint8), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty((rows, cols), device=x.device, dtype=torch.uint8)
        gt_mean_u8_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
        return out.view(torch.bool)
