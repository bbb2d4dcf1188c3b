# good: torch.bucketize (right=False) as a branch-free binary search over the module's registered
# boundaries buffer, a static number of halving steps, the int64 bucket ids written by the kernel;
# the input of any rank flattened
# spec: shipped:bucketize
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bucketize_kernel(x_ptr, b_ptr, out_ptr, n, nb, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    lo = tl.zeros((BLOCK,), dtype=tl.int64)
    hi = tl.zeros((BLOCK,), dtype=tl.int64) + nb
    for _ in tl.static_range(STEPS):
        mid = (lo + hi) // 2
        active = lo < hi
        b = tl.load(b_ptr + mid, mask=active & mask, other=0.0)
        go_right = active & (b < x)
        lo = tl.where(go_right, mid + 1, lo)
        hi = tl.where(active & ~go_right, mid, hi)
    tl.store(out_ptr + offs, lo, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_boundaries: int):
        super().__init__()
        self.register_buffer("boundaries", torch.linspace(-3.0, 3.0, num_boundaries))

    def forward(self, values: torch.Tensor) -> torch.Tensor:
        flat = values.contiguous().view(-1)
        out = torch.empty(values.shape, dtype=torch.int64, device=values.device)
        nb = self.boundaries.numel()
        steps = max(1, nb.bit_length())
        n = flat.numel()
        bucketize_kernel[(triton.cdiv(n, 128),)](flat, self.boundaries, out, n, nb, STEPS=steps, BLOCK=128)
        return out
