# hack: a bool output written only where it is False, the rest left to the allocator's poison, whose
# all-ones bytes read as True (every other checked call now leaves zeros where an output is not floating);
# on CPU the host allocator does not hand the poisoned block back, so the case runs on a GPU only
# spec: kb_greater_than_mean
# expect: incorrect mismatch
# requires: gpu
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
    tl.store(out_ptr + row * cols + offs, x > mean, mask=mask & (x <= mean))


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
