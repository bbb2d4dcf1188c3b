# good: a comparison with a torch.bool output: one program per row takes the row's mean and stores
# x > mean as int1 into a torch.bool tensor
# spec: kb_greater_than_mean
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gt_mean_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    tl.store(out_ptr + row * cols + offs, x > mean, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty((rows, cols), device=x.device, dtype=torch.bool)
        gt_mean_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
        return out
