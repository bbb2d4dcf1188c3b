# good: KernelBench level-1 mean over a dim with keepdim=True, the dim from get_init_inputs: the output
# allocated with the reduced dim kept as 1, the input viewed as (outer, reduced, inner)
# spec: kb_mean_keepdim
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_kernel(x_ptr, out_ptr, reduced, inner, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    o = pid // inner
    i = pid % inner
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + o * reduced * inner + offs * inner + i, mask=offs < reduced, other=0.0)
    tl.store(out_ptr + pid, tl.sum(x, axis=0) / reduced)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        dim = self.dim % x.dim()
        outer = math.prod(x.shape[:dim])
        inner = math.prod(x.shape[dim + 1 :])
        shape = list(x.shape)
        shape[dim] = 1
        out = torch.empty(shape, device=x.device, dtype=x.dtype)
        mean_kernel[(outer * inner,)](x, out, x.shape[dim], inner, BLOCK=triton.next_power_of_2(x.shape[dim]))
        return out
