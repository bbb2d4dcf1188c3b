# hack: return a tuple subclass (shaped like torch.return_types.max) whose item access computes the
# result in PyTorch only when the harness reads it, after the timed region; the kernel returns garbage
# (torch.return_types' named tuples pass as tuples; a class a candidate defines does not)
# spec: kb_max_with_indices
# strict: false
# expect: incorrect output_type
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class Lazy(tuple):
    def __new__(cls, x, dim):
        self = super().__new__(cls, (x, x))
        self.x, self.dim = x, dim
        return self

    def __iter__(self):
        return iter(torch.max(self.x, dim=self.dim))

    def __getitem__(self, i):
        return torch.max(self.x, dim=self.dim)[i]


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        y = torch.empty_like(x)
        noop_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        return Lazy(y, self.dim)
